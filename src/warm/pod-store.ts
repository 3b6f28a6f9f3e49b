/**
 * The agent's pod store and sticky reservations, two tables of the resource DB
 * (resource-db.ts, same SQLite file, same transactions) — Terway's local pod storage:
 * - `pod_store`: every attachment the warm pool served (namespace, name, uid, container id,
 *   ifname, owner kind, the pool key and addresses), kept after its DEL (`deleted_at`) for
 *   POD_RETENTION_MS so the GC and a returning StatefulSet pod still know it, then purged;
 *   `gone_at` is when the GC first saw its pod missing from the API server.
 * - `sticky_reservations`: addresses a sticky pod released, waiting for its pool key
 *   (namespace/name) until `expires_at`; rebuilt into the pool's reservations at start.
 */
import { oneRow, type SqliteDb } from '../sqlite/index.js';

/** How long a deleted pod stays in the pod store (Terway: an hour). */
export const POD_RETENTION_MS = 3_600_000;

/** One attachment the warm pool served. */
export interface PodStoreRow {
  /** The attachment key `<network>:<containerID>:<ifname>`. */
  readonly key: string;
  readonly network: string;
  readonly namespace: string | undefined;
  readonly name: string | undefined;
  readonly uid: string | undefined;
  readonly containerId: string;
  readonly ifname: string;
  /** The pod's controller kind (`StatefulSet`, `ReplicaSet`, …); undefined: none or not known. */
  readonly ownerKind: string | undefined;
  /** Its address is reserved for `poolKey` on release. */
  readonly sticky: boolean;
  /** The key the warm pool holds the addresses under (the sticky key, else `key`). */
  readonly poolKey: string;
  readonly addrs: readonly string[];
  readonly addedAt: number;
  readonly deletedAt: number | undefined;
  readonly goneAt: number | undefined;
}

/** An address kept for a sticky pool key. */
export interface StickyRow {
  readonly addr: string;
  readonly family: 4 | 6;
  readonly poolKey: string;
  readonly expiresAt: number;
  readonly freeAt: number;
}

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS pod_store (key TEXT PRIMARY KEY NOT NULL, network TEXT NOT NULL, namespace TEXT, name TEXT, uid TEXT,
    container_id TEXT NOT NULL, ifname TEXT NOT NULL, owner_kind TEXT, sticky INTEGER NOT NULL, pool_key TEXT NOT NULL,
    addrs TEXT NOT NULL, added_at INTEGER NOT NULL, deleted_at INTEGER, gone_at INTEGER);
  CREATE INDEX IF NOT EXISTS pod_store_pod ON pod_store (namespace, name);
  CREATE INDEX IF NOT EXISTS pod_store_pool_key ON pod_store (pool_key);
  CREATE TABLE IF NOT EXISTS sticky_reservations (addr TEXT PRIMARY KEY NOT NULL, family INTEGER NOT NULL, pool_key TEXT NOT NULL,
    expires_at INTEGER NOT NULL, free_at INTEGER NOT NULL);
`;

interface RawPod {
  key: string;
  network: string;
  namespace: string | null;
  name: string | null;
  uid: string | null;
  containerId: string;
  ifname: string;
  ownerKind: string | null;
  sticky: number;
  poolKey: string;
  addrs: string;
  addedAt: number;
  deletedAt: number | null;
  goneAt: number | null;
}

const COLUMNS =
  'key, network, namespace, name, uid, container_id AS containerId, ifname, owner_kind AS ownerKind, sticky, pool_key AS poolKey, addrs, added_at AS addedAt, deleted_at AS deletedAt, gone_at AS goneAt';

function row(r: RawPod): PodStoreRow {
  return {
    key: r.key,
    network: r.network,
    namespace: r.namespace ?? undefined,
    name: r.name ?? undefined,
    uid: r.uid ?? undefined,
    containerId: r.containerId,
    ifname: r.ifname,
    ownerKind: r.ownerKind ?? undefined,
    sticky: r.sticky === 1,
    poolKey: r.poolKey,
    addrs: JSON.parse(r.addrs) as string[],
    addedAt: r.addedAt,
    deletedAt: r.deletedAt ?? undefined,
    goneAt: r.goneAt ?? undefined,
  };
}

function prepareStatements(db: SqliteDb) {
  return {
    put: db.prepare(`INSERT OR REPLACE INTO pod_store (key, network, namespace, name, uid, container_id, ifname, owner_kind, sticky, pool_key, addrs, added_at, deleted_at, gone_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL)`),
    get: db.prepare<RawPod>(`SELECT ${COLUMNS} FROM pod_store WHERE key = ?`),
    live: db.prepare<RawPod>(`SELECT ${COLUMNS} FROM pod_store WHERE deleted_at IS NULL ORDER BY key`),
    liveNames: db.prepare<{ key: string; namespace: string | null; name: string | null }>(
      'SELECT key, namespace, name FROM pod_store WHERE deleted_at IS NULL',
    ),
    all: db.prepare<RawPod>(`SELECT ${COLUMNS} FROM pod_store ORDER BY key`),
    count: db.prepare<{ n: number }>('SELECT COUNT(*) AS n FROM pod_store'),
    byPod: db.prepare<RawPod>(`SELECT ${COLUMNS} FROM pod_store WHERE namespace = ? AND name = ? ORDER BY added_at DESC`),
    holder: db.prepare<RawPod>(`SELECT ${COLUMNS} FROM pod_store WHERE pool_key = ? AND deleted_at IS NULL`),
    deleted: db.prepare('UPDATE pod_store SET deleted_at = ? WHERE key = ? AND deleted_at IS NULL'),
    gone: db.prepare('UPDATE pod_store SET gone_at = ? WHERE key = ? AND gone_at IS NULL'),
    back: db.prepare('UPDATE pod_store SET gone_at = NULL WHERE key = ?'),
    purge: db.prepare('DELETE FROM pod_store WHERE deleted_at IS NOT NULL AND deleted_at <= ?'),
    reserve: db.prepare('INSERT OR REPLACE INTO sticky_reservations (addr, family, pool_key, expires_at, free_at) VALUES (?, ?, ?, ?, ?)'),
    unreserve: db.prepare('DELETE FROM sticky_reservations WHERE pool_key = ?'),
    unreserveAddr: db.prepare('DELETE FROM sticky_reservations WHERE addr = ?'),
    reservations: db.prepare<StickyRow>(
      'SELECT addr, family, pool_key AS poolKey, expires_at AS expiresAt, free_at AS freeAt FROM sticky_reservations ORDER BY addr',
    ),
    expire: db.prepare('DELETE FROM sticky_reservations WHERE expires_at <= ?'),
  };
}

export class PodStore {
  readonly #st: ReturnType<typeof prepareStatements>;

  /** Creates the tables in the resource DB's database if missing. */
  constructor(db: SqliteDb) {
    db.exec(SCHEMA);
    this.#st = prepareStatements(db);
  }

  /** An attachment got its addresses (a new row, or the same key again: replaced, live). */
  seen(r: Omit<PodStoreRow, 'deletedAt' | 'goneAt'>): void {
    this.#st.put.run(
      r.key,
      r.network,
      r.namespace ?? null,
      r.name ?? null,
      r.uid ?? null,
      r.containerId,
      r.ifname,
      r.ownerKind ?? null,
      r.sticky ? 1 : 0,
      r.poolKey,
      JSON.stringify(r.addrs),
      r.addedAt,
    );
  }

  get(key: string): PodStoreRow | undefined {
    const r = this.#st.get.get(key);
    return r && row(r);
  }

  /** Attachments not yet deleted. */
  live(): PodStoreRow[] {
    return this.#st.live.all().map(row);
  }

  /** The namespace and name of each attachment not yet deleted, by key (one statement: the holder view's, for every pod). */
  liveNames(): Map<string, { readonly namespace: string | undefined; readonly name: string | undefined }> {
    return new Map(this.#st.liveNames.all().map((r) => [r.key, { namespace: r.namespace ?? undefined, name: r.name ?? undefined }]));
  }

  /** Every row, deleted ones included. */
  all(): PodStoreRow[] {
    return this.#st.all.all().map(row);
  }

  /** How many rows, deleted ones included. */
  count(): number {
    return oneRow(this.#st.count).n;
  }

  /** Rows of the pod namespace/name, newest first. */
  byPod(namespace: string, name: string): PodStoreRow[] {
    return this.#st.byPod.all(namespace, name).map(row);
  }

  /** The live attachment holding pool key `poolKey`, if any. */
  holder(poolKey: string): PodStoreRow | undefined {
    const r = this.#st.holder.get(poolKey);
    return r && row(r);
  }

  /** The attachment let go of its addresses (DEL, GC): kept until `now + POD_RETENTION_MS`. */
  deleted(key: string, now: number): void {
    this.#st.deleted.run(now, key);
  }

  /** The GC saw the attachment's pod missing from the API server at `at` (first time only). */
  gone(key: string, at: number): void {
    this.#st.gone.run(at, key);
  }

  /** The attachment's pod is in the API server again. */
  back(key: string): void {
    this.#st.back.run(key);
  }

  /** Deletes rows deleted at or before `now - retentionMs`; returns how many. */
  purge(now: number, retentionMs = POD_RETENTION_MS): number {
    return this.#st.purge.run(now - retentionMs).changes;
  }

  reserve(rows: readonly StickyRow[]): void {
    for (const r of rows) this.#st.reserve.run(r.addr, r.family, r.poolKey, r.expiresAt, r.freeAt);
  }

  /** The pool key took its reservation back (or it no longer applies). */
  unreserve(poolKey: string): void {
    this.#st.unreserve.run(poolKey);
  }

  /** Reservation rows of these addresses are dropped (the addresses left the node). */
  unreserveAddrs(addrs: readonly string[]): void {
    for (const a of addrs) this.#st.unreserveAddr.run(a);
  }

  reservations(): StickyRow[] {
    return this.#st.reservations.all();
  }

  /** Drops reservations whose window ended by `now` (the pool has moved them to idle); returns how many. */
  expireReservations(now: number): number {
    return this.#st.expire.run(now).changes;
  }
}
