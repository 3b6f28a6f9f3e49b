/**
 * `podipam datastore backup|restore|certs`: the datastore itself, whatever podipam keeps in it.
 *
 * backup FILE: every key, read at one revision, as podipam's logical backup (JSON lines,
 * src/store/backup-file.ts), restorable into any back end; `--snapshot` writes the back end's
 * own image instead (etcd: its Maintenance Snapshot, for `etcdutl snapshot restore`; SQLite:
 * its online backup, a database file to copy in place). restore FILE: a logical backup into an
 * empty datastore (`--force`: replace what it holds); the file is checked whole first, so a
 * bad one writes nothing. certs --dir DIR: the CA and certificates deploy/'s etcd runs with
 * (src/install/etcd-certs.ts) and the `kubectl create secret` commands that load them.
 */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { openCommandStore } from './datastore-url.js';
import { outputFormat, printData, withOutputOptions } from './output.js';
import { parseIntFlag } from './parse-flag.js';
import { UsageError } from './usage-error.js';

/** Registers `podipam datastore …`. */
export function registerDatastore(program: Command): void {
  const ds = program.command('datastore').description('back up, restore and secure the datastore');

  withOutputOptions(
    ds
      .command('backup')
      .description('write every key of the datastore, read at one revision, to FILE (replaced atomically)')
      .argument('<file>', 'the backup file to write')
      .option(
        '--snapshot',
        "the back end's own image instead: etcd's snapshot (restore with etcdutl snapshot restore), SQLite's online backup (a database file)",
      ),
    '{"file", "kind", "keys", "rev", "bytes"}',
  ).action(async (file: string, opts: { snapshot?: boolean; output?: string; json?: boolean }, cmd: Command) => {
    const format = outputFormat(opts);
    const store = await openCommandStore(cmd, 'read');
    try {
      if (opts.snapshot === true) {
        const out = await rawSnapshot(store, file);
        if (!printData(format, { file, kind: out.kind, bytes: out.bytes, from: out.from }))
          process.stdout.write(`${out.kind} of ${store.url} (${out.from}) written to ${file}: ${out.bytes} bytes\n`);
        return;
      }
      const [{ backupText }, { writeFileAtomic }] = await Promise.all([import('../store/backup-store.js'), import('../install/atomic-write.js')]);
      const b = await backupText(store, new Date());
      const bytes = Buffer.from(b.text, 'utf8');
      try {
        writeFileAtomic(file, bytes, 0o600);
      } catch (e) {
        throw new Error(`cannot write backup ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, { cause: e });
      }
      if (!printData(format, { file, kind: 'podipam-backup', keys: b.keys, rev: b.rev, bytes: bytes.length })) {
        process.stdout.write(`${b.keys} keys of ${store.url} at revision ${b.rev} written to ${file}\n`);
      }
    } finally {
      await store.close();
    }
  });

  withOutputOptions(
    ds
      .command('restore')
      .description('write a backup (podipam datastore backup FILE) into an empty datastore; the file is checked whole first')
      .argument('<file>', 'the backup file')
      .option('--force', 'delete what the datastore holds first (stop every podipam process on it)'),
    '{"file", "restored", "deleted", "rev"}',
  ).action(async (file: string, opts: { force?: boolean; output?: string; json?: boolean }, cmd: Command) => {
    const format = outputFormat(opts);
    const [{ parseBackup }, { restoreBackup }] = await Promise.all([import('../store/backup-file.js'), import('../store/backup-store.js')]);
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (e) {
      throw new UsageError(`cannot read backup ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, { cause: e });
    }
    const backup = parseBackup(file, text);
    const store = await openCommandStore(cmd, 'write');
    try {
      // A restored stamp would time the restore's writes as the backup's old transaction: stamps go last, alone.
      const { STAMP_PREFIX } = await import('../cluster/records/index.js');
      const r = await restoreBackup(store, backup, { force: opts.force === true, last: (key) => key.startsWith(STAMP_PREFIX) });
      if (
        !printData(format, {
          file,
          restored: r.restored,
          deleted: r.deleted,
          rev: r.rev,
          source: backup.header.source,
          sourceRev: backup.header.rev,
          at: backup.header.at,
        })
      ) {
        process.stdout.write(
          `${r.restored} keys restored into ${store.url} from ${file} (${backup.header.source} at revision ${backup.header.rev}, ${backup.header.at})${r.deleted > 0 ? `; ${r.deleted} keys it held deleted first` : ''}\n`,
        );
      }
    } finally {
      await store.close();
    }
  });

  withOutputOptions(
    ds
      .command('certs')
      .description(
        "make a CA and the etcd server, peer and client certificates deploy/'s etcd runs with (openssl), and print the kubectl commands that load them",
      )
      .requiredOption('--dir <dir>', 'directory to write them into (must not hold certificates yet); keep ca.key safe')
      .option('--namespace <ns>', 'the namespace of deploy/', 'podipam-system')
      .option('--name <name>', 'the etcd StatefulSet and client Service name (peers: NAME-peer)', 'podipam-etcd')
      .option('--members <n>', 'the StatefulSet replicas to name', '3')
      .option('--days <n>', 'validity of the server, peer and client certificates', '365')
      .option('--ca-days <n>', 'validity of the CA', '3650')
      .option('--cluster-domain <domain>', 'the cluster DNS domain', 'cluster.local'),
    '{"files", "dnsNames", "ips", "commands"}',
  ).action(
    async (opts: {
      dir: string;
      namespace: string;
      name: string;
      members: string;
      days: string;
      caDays: string;
      clusterDomain: string;
      output?: string;
      json?: boolean;
    }) => {
      const format = outputFormat(opts);
      const { checkEtcdCertOptions, etcdSecretCommands, makeEtcdCerts } = await import('../install/etcd-certs.js');
      const options = {
        dir: opts.dir,
        namespace: opts.namespace,
        name: opts.name,
        members: parseIntFlag('--members', opts.members, { min: 1, max: 9 }),
        days: parseIntFlag('--days', opts.days, { min: 1, max: 36500 }),
        caDays: parseIntFlag('--ca-days', opts.caDays, { min: 1, max: 36500 }),
        clusterDomain: opts.clusterDomain,
      };
      try {
        checkEtcdCertOptions(options);
      } catch (e) {
        throw new UsageError((e as Error).message, { cause: e });
      }
      const files = makeEtcdCerts(options);
      const commands = etcdSecretCommands(files, options.namespace);
      if (printData(format, { files, dnsNames: files.dnsNames, ips: files.ips, commands })) return;
      process.stdout.write(`CA, server, peer and client certificates written to ${opts.dir} (keep ca.key out of the cluster: it signs new certificates)\n`);
      process.stdout.write(`names: ${[...files.dnsNames, ...files.ips].join(', ')}\nload them into the Secrets deploy/ mounts:\n`);
      for (const c of commands) process.stdout.write(`  ${c}\n`);
    },
  );
}

/** The back end's own image of the store (`--snapshot`). */
async function rawSnapshot(store: import('../store/index.js').Store, file: string): Promise<{ kind: string; bytes: number; from: string }> {
  const [{ EtcdStore }, { SqliteStore }, { statSync, renameSync, rmSync }] = await Promise.all([
    import('../store/etcd/etcd-store.js'),
    import('../store/sqlite/sqlite-store.js'),
    import('node:fs'),
  ]);
  if (store instanceof EtcdStore) {
    const r = await store.saveSnapshot(file);
    return { kind: 'etcd snapshot', bytes: r.bytes, from: `member ${r.endpoint}` };
  }
  if (store instanceof SqliteStore) {
    const tmp = `${file}.partial-${process.pid}`;
    try {
      await store.backupTo(tmp);
      renameSync(tmp, file);
    } catch (e) {
      rmSync(tmp, { force: true });
      throw e;
    }
    return { kind: 'SQLite online backup', bytes: statSync(file).size, from: 'one read snapshot' };
  }
  throw new UsageError(`--snapshot: ${store.url} has no snapshot of its own (etcd and SQLite do); back it up without --snapshot`);
}
