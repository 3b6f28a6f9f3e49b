/**
 * The agent's resource DB: one SQLite file (`<data-dir>/resources.db`, WAL) holding what the
 * warm pool must not forget across a restart — every address the node's warm handles hold in
 * the datastore (with its block prefix length and gateway, to answer an ADD without asking
 * the datastore, and `free_at`, the end of its cooldown), the pods using some of them, and the
 * write-behind queue of pod records still to be written to the datastore.
 *
 * Every mutation is one SQLite transaction, committed before the caller goes on (an ADD is
 * answered only after its pod row is in). synchronous=NORMAL in WAL mode: a commit survives the
 * agent's crash (SIGKILL); a power loss may lose the last commits, and with them the node's
 * pods, which a reboot restarts anyway.
 */
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

/** The better-sqlite3 surface the agent uses (shared with pod-store.ts). */
export interface Statement {
  all(...params: unknown[]): unknown[];
  run(...params: unknown[]): { changes: number };
}
export interface Database {
  pragma(source: string): unknown;
  prepare(sql: string): Statement;
  exec(sql: string): void;
  transaction<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R;
  close(): void;
}
type DatabaseConstructor = new (path: string, options?: { timeout?: number }) => Database;

/** An address a warm handle holds, as the DB keeps it. */
export interface HeldRow {
  readonly addr: string;
  readonly family: 4 | 6;
  /** The warm handle holding it in the datastore. */
  readonly handle: string;
  readonly prefixLen: number;
  readonly gateway: string;
  /** Idle from this time (ms since the epoch); meaningless while a pod holds it. */
  readonly freeAt: number;
}

/** A pod (CNI attachment) holding warm addresses. */
export interface PodRow {
  /** The attachment key: `<network>:<containerID>:<ifname>` (handle-id.ts). */
  readonly key: string;
  readonly network: string;
  readonly containerId: string;
  readonly ifname: string;
  readonly addrs: readonly string[];
  readonly since: number;
}

/** A pod record to write (`value`) or delete (`value` undefined) in the datastore. */
export interface PendingWrite {
  readonly seq: number;
  readonly key: string;
  readonly value: string | undefined;
  readonly at: number;
}

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS held (addr TEXT PRIMARY KEY NOT NULL, family INTEGER NOT NULL, handle TEXT NOT NULL,
    prefix_len INTEGER NOT NULL, gateway TEXT NOT NULL, free_at INTEGER NOT NULL);
  CREATE TABLE IF NOT EXISTS pods (key TEXT PRIMARY KEY NOT NULL, network TEXT NOT NULL, container_id TEXT NOT NULL,
    ifname TEXT NOT NULL, addrs TEXT NOT NULL, since INTEGER NOT NULL);
  CREATE TABLE IF NOT EXISTS writes (seq INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL, value TEXT, at INTEGER NOT NULL);
`;

export class ResourceDb {
  readonly path: string;
  readonly #db: Database;
  readonly #st: Record<string, Statement>;
  // The per-pod transactions, built once (the hot path of an ADD and a DEL).
  readonly #addPodTx: (pod: PodRow, record: { key: string; value: string }) => void;
  readonly #removePodTx: (key: string, addrs: readonly string[], freeAt: number, recordKey: string, now: number) => void;

  /** Opens (creating) `<dir>/resources.db`. */
  constructor(dir: string) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.path = join(dir, 'resources.db');
    const Db = createRequire(import.meta.url)('better-sqlite3') as DatabaseConstructor;
    this.#db = new Db(this.path, { timeout: 5000 });
    this.#db.pragma('journal_mode = WAL');
    this.#db.pragma('synchronous = NORMAL');
    this.#db.exec(SCHEMA);
    const p = (sql: string): Statement => this.#db.prepare(sql);
    this.#st = {
      putHeld: p('INSERT OR REPLACE INTO held (addr, family, handle, prefix_len, gateway, free_at) VALUES (?, ?, ?, ?, ?, ?)'),
      delHeld: p('DELETE FROM held WHERE addr = ?'),
      freeAt: p('UPDATE held SET free_at = ? WHERE addr = ?'),
      putPod: p('INSERT OR REPLACE INTO pods (key, network, container_id, ifname, addrs, since) VALUES (?, ?, ?, ?, ?, ?)'),
      delPod: p('DELETE FROM pods WHERE key = ?'),
      queue: p('INSERT INTO writes (key, value, at) VALUES (?, ?, ?)'),
      unqueue: p('DELETE FROM writes WHERE seq <= ?'),
      hasPod: p('SELECT 1 FROM pods WHERE key = ?'),
      allHeld: p('SELECT addr, family, handle, prefix_len AS prefixLen, gateway, free_at AS freeAt FROM held ORDER BY addr'),
      allPods: p('SELECT key, network, container_id AS containerId, ifname, addrs, since FROM pods ORDER BY key'),
      pending: p('SELECT seq, key, value, at FROM writes ORDER BY seq LIMIT ?'),
      depth: p('SELECT COUNT(*) AS n, MIN(at) AS oldest FROM writes'),
    };
    this.#addPodTx = this.#db.transaction((pod: PodRow, record: { key: string; value: string }) => {
      this.#st.putPod!.run(pod.key, pod.network, pod.containerId, pod.ifname, JSON.stringify(pod.addrs), pod.since);
      this.#st.queue!.run(record.key, record.value, pod.since);
    });
    this.#removePodTx = this.#db.transaction((key: string, addrs: readonly string[], freeAt: number, recordKey: string, now: number) => {
      this.#st.delPod!.run(key);
      for (const a of addrs) this.#st.freeAt!.run(freeAt, a);
      this.#st.queue!.run(recordKey, null, now);
    });
  }

  /** Addresses just assigned to a warm handle. */
  addHeld(rows: readonly HeldRow[]): void {
    this.#tx(() => {
      for (const r of rows) this.#st.putHeld!.run(r.addr, r.family, r.handle, r.prefixLen, r.gateway, r.freeAt);
    });
  }

  /** Addresses released in the datastore (or found gone): forgotten. */
  dropHeld(addrs: readonly string[]): void {
    this.#tx(() => {
      for (const a of addrs) this.#st.delHeld!.run(a);
    });
  }

  /** A pod got its addresses: its row and its datastore record queued, in one commit. */
  addPod(pod: PodRow, record: { key: string; value: string }): void {
    this.#addPodTx(pod, record);
  }

  /** A pod let go of its addresses (idle from `freeAt`); the datastore record's delete queued. */
  removePod(key: string, addrs: readonly string[], freeAt: number, recordKey: string, now: number): void {
    this.#removePodTx(key, addrs, freeAt, recordKey, now);
  }


  hasPod(key: string): boolean {
    return this.#st.hasPod!.all(key).length > 0;
  }

  held(): HeldRow[] {
    return this.#st.allHeld!.all() as HeldRow[];
  }

  pods(): PodRow[] {
    return (this.#st.allPods!.all() as (Omit<PodRow, 'addrs'> & { addrs: string })[]).map((r) => ({ ...r, addrs: JSON.parse(r.addrs) as string[] }));
  }

  /** The oldest `limit` queued writes. */
  pendingWrites(limit: number): PendingWrite[] {
    return (this.#st.pending!.all(limit) as { seq: number; key: string; value: string | null; at: number }[]).map((r) => ({ ...r, value: r.value ?? undefined }));
  }

  /** The queued writes up to `seq` are in the datastore. */
  writesDone(seq: number): void {
    this.#st.unqueue!.run(seq);
  }

  /** Queued writes and the time of the oldest (undefined when none). */
  writeDepth(): { depth: number; oldestAt: number | undefined } {
    const r = this.#st.depth!.all()[0] as { n: number; oldest: number | null };
    return { depth: r.n, oldestAt: r.oldest ?? undefined };
  }

  close(): void {
    this.#db.close();
  }

  /** The open database, for the tables of pod-store.ts (same file, same transactions). */
  get database(): Database {
    return this.#db;
  }

  /** Runs `fn` in one transaction (nested calls become savepoints). */
  transaction(fn: () => void): void {
    this.#tx(fn);
  }

  #tx(fn: () => void): void {
    this.#db.transaction(fn)();
  }
}
