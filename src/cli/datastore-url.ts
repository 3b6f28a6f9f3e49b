import { homedir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import type { Store } from '../store/index.js';

/** The default data directory: $PODIPAM_DATA_DIR, else /var/lib/podipam for root, else ~/.local/share/podipam. */
export function defaultDataDir(): string {
  if (process.env.PODIPAM_DATA_DIR) return process.env.PODIPAM_DATA_DIR;
  if (process.getuid?.() === 0) return '/var/lib/podipam';
  return join(homedir(), '.local', 'share', 'podipam');
}

/** The SQLite datastore URL inside a data directory (what `podipam serve --data-dir` uses). */
export function sqliteUrlFor(dataDir: string): string {
  return `sqlite:${join(dataDir, 'podipam.db')}`;
}

/** The datastore URL for a command: --datastore, else $PODIPAM_DATASTORE, else SQLite in the default data dir. */
export function datastoreUrl(cmd: Command): string {
  const opts = cmd.optsWithGlobals<{ datastore?: string }>();
  return opts.datastore ?? process.env.PODIPAM_DATASTORE ?? sqliteUrlFor(defaultDataDir());
}

/** What a command does with its datastore: a `read` never creates one, a `write` may. */
export type StoreAccess = 'read' | 'write';

/**
 * Opens the command's datastore (datastoreUrl). For a `read` a SQLite file that does not
 * exist is StoreMissingError naming it — a read-only command creates no file or directory.
 */
export async function openCommandStore(cmd: Command, access: StoreAccess): Promise<Store> {
  const { openStore } = await import('../store/index.js');
  return openStore(datastoreUrl(cmd), { create: access === 'write' });
}
