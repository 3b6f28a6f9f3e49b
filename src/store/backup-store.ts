/**
 * Taking and restoring podipam's logical backup (backup-file.ts) on any store. A backup is
 * one snapshot (Store.snapshot: one revision). A restore goes only into an empty store unless
 * `force` (then what the store holds is deleted first), in transactions of at most
 * MAX_TXN_OPS keys, each put guarded by "the key is absent", so a writer racing the restore
 * makes it stop with an error instead of being overwritten. The file is parsed and checked
 * whole before the first write (parseBackup). Keys `options.last` names (the history's stamps:
 * the time and reason of the writer's transaction that last wrote them) are written after all
 * others, in transactions of their own, so that an old stamp times nothing else the restore writes.
 */
import { MAX_TXN_OPS } from './check-input.js';
import { StoreError } from './errors.js';
import { formatBackup, type Backup } from './backup-file.js';
import type { Store } from './store.js';

/** The backup text of every key in `store`, read at one revision. */
export async function backupText(store: Store, now: Date): Promise<{ text: string; rev: number; keys: number }> {
  const { rev, entries } = await store.snapshot('');
  return { text: formatBackup(store.url, rev, now, entries), rev, keys: entries.length };
}

export interface RestoreResult {
  /** Keys the store held and a `force` restore deleted. */
  readonly deleted: number;
  readonly restored: number;
  /** The store's revision after the last write. */
  readonly rev: number;
}

/** Writes `backup` into `store` (see the header): refuses a non-empty store unless `force`. */
export async function restoreBackup(
  store: Store,
  backup: Backup,
  options: { readonly force?: boolean; readonly last?: (key: string) => boolean } = {},
): Promise<RestoreResult> {
  const existing = (await store.snapshot('')).entries;
  if (existing.length > 0 && options.force !== true) {
    const first = existing
      .slice(0, 3)
      .map((e) => JSON.stringify(e.key))
      .join(', ');
    throw new StoreError(
      store.url,
      `holds ${existing.length} keys (${first}${existing.length > 3 ? ', …' : ''}): a restore goes into an empty datastore; give --force to delete them and restore (stop every podipam process on this datastore first)`,
    );
  }
  let rev = 0;
  let done = 0;
  const raced = (key: string, what: string): never => {
    throw new StoreError(
      store.url,
      `key ${JSON.stringify(key)} changed while restoring (${what}; ${done} of ${backup.entries.length} keys restored): stop every podipam process on this datastore and restore again with --force`,
    );
  };
  for (let i = 0; i < existing.length; i += MAX_TXN_OPS) {
    const chunk = existing.slice(i, i + MAX_TXN_OPS);
    const r = await store.txn(
      chunk.map((e) => ({ key: e.key, rev: e.rev })),
      chunk.map((e) => ({ type: 'delete' as const, key: e.key })),
    );
    if (!r.succeeded) raced(chunk[r.current?.findIndex((c, j) => c?.rev !== chunk[j]?.rev) ?? 0]?.key ?? '?', 'while deleting what the store held');
    rev = r.rev;
  }
  const last = options.last;
  const ordered = last === undefined ? [backup.entries] : [backup.entries.filter((e) => !last(e.key)), backup.entries.filter((e) => last(e.key))];
  for (const entries of ordered)
    for (let i = 0; i < entries.length; i += MAX_TXN_OPS) {
      const chunk = entries.slice(i, i + MAX_TXN_OPS);
      const r = await store.txn(
        chunk.map((e) => ({ key: e.key, rev: 0 })),
        chunk.map((e) => ({ type: 'put' as const, key: e.key, value: e.value })),
      );
      if (!r.succeeded) raced(chunk[r.current?.findIndex((c) => c !== undefined) ?? 0]?.key ?? '?', 'written by someone else');
      done += chunk.length;
      rev = r.rev;
    }
  return { deleted: existing.length, restored: done, rev };
}
