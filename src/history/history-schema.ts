/**
 * The history file's schema (sqlite-history-db.ts). One file holds the history of one datastore:
 *
 * - `meta(name, value)`: `kind` = `podipam-history` (a file without it is not a history file),
 *   `schema` (the version below), and once the follower applied a batch `source`, `revision`,
 *   `at` (its position) and `identity` (the datastore's, Store.identity); `horizon` after a purge (instants before it: unknown).
 * - `holds`: one row per hold. `address` is the canonical text (formatAddr: dotted quad, RFC 5952),
 *   looked up by equality only. `lo` = the earliest instant the hold may have begun
 *   (`from_earliest`, else `from_at`), kept so one index range finds every hold that may cover an
 *   instant. `until_at` NULL: still held.
 * - `gaps`: the intervals the history cannot cover.
 *
 * Indexes: `holds_address (address, lo, until_at)` (holderAt, holdsOfAddress: the holds of one
 * address that began before an instant, their ends in the index); `holds_open (address, handle)
 * WHERE until_at IS NULL`, unique (an end finds its hold; a replayed start is ignored; openHolds);
 * `holds_pod (pod_ns, pod_name, lo)`; `holds_from (from_at)` and `holds_until (until_at)` (the
 * export in time order; purge by end); `gaps_until (until_at)`.
 */
export const HISTORY_KIND = 'podipam-history';
export const HISTORY_SCHEMA_VERSION = 1;

export const HISTORY_SCHEMA = `
  CREATE TABLE meta (name TEXT PRIMARY KEY NOT NULL, value) WITHOUT ROWID;
  CREATE TABLE holds (
    id INTEGER PRIMARY KEY,
    address TEXT NOT NULL,
    handle TEXT NOT NULL,
    pod_ns TEXT, pod_name TEXT, pod_uid TEXT,
    container_id TEXT, ifname TEXT, network TEXT, node TEXT, pool TEXT, block TEXT,
    lo INTEGER NOT NULL,
    from_at INTEGER NOT NULL, from_earliest INTEGER,
    until_at INTEGER, until_earliest INTEGER, why TEXT
  );
  CREATE INDEX holds_address ON holds (address, lo, until_at);
  CREATE UNIQUE INDEX holds_open ON holds (address, handle) WHERE until_at IS NULL;
  CREATE INDEX holds_pod ON holds (pod_ns, pod_name, lo) WHERE pod_ns IS NOT NULL;
  CREATE INDEX holds_from ON holds (from_at);
  CREATE INDEX holds_until ON holds (until_at) WHERE until_at IS NOT NULL;
  CREATE TABLE gaps (id INTEGER PRIMARY KEY, from_at INTEGER NOT NULL, until_at INTEGER NOT NULL, cause TEXT NOT NULL);
  CREATE INDEX gaps_until ON gaps (until_at);
`;
