import { randomUUID } from 'node:crypto';
import { checkKey, checkKeys, checkListOptions, checkPrefix, checkTxn, checkWatch } from '../check-input.js';
import { StoreCompactedError, StoreError } from '../errors.js';
import { compareKeys } from '../key-order.js';
import type { Compare, Entry, ListOptions, Op, Store, TxnResult, WatchEvent, WatchOptions } from '../store.js';
import { WatchFeed } from '../watch-feed.js';

/** Changes the memory store keeps for watches that start in the past or fall behind. */
export const MEMORY_LOG_EVENTS = 10_000;

/** The data behind one memory store; named stores share one of these per process. */
class MemoryData {
  readonly entries = new Map<string, Entry>();
  /** Every key, sorted by compareKeys. */
  readonly keys: string[] = [];
  rev = 0;
  /** Identity: this data's own, never another's. */
  readonly id = randomUUID();
  /** The last changes, oldest first, whole revisions only; `logFrom` is the first revision kept. */
  readonly log: WatchEvent[] = [];
  logFrom = 1;
  /** Live watches: each gets every revision's events as they are written. */
  readonly watchers = new Set<(events: readonly WatchEvent[]) => void>();

  /** Appends one revision's changes to the log (trimming it) and tells the watches. */
  record(events: WatchEvent[]): void {
    this.log.push(...events);
    if (this.log.length > MEMORY_LOG_EVENTS) {
      // Drop whole revisions: the first kept revision is that of the first event left.
      let cut = this.log.length - MEMORY_LOG_EVENTS;
      const edge = (this.log[cut] as WatchEvent).modRevision;
      while (cut > 0 && (this.log[cut - 1] as WatchEvent).modRevision === edge) cut--;
      if (cut === 0) cut = this.log.findIndex((e) => e.modRevision > edge);
      this.log.splice(0, cut < 0 ? this.log.length : cut);
      this.logFrom = this.log[0]?.modRevision ?? this.rev + 1;
    }
    for (const w of this.watchers) w(events);
  }

  /** Index of the first key not less than `key`. */
  lowerBound(key: string): number {
    let lo = 0;
    let hi = this.keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareKeys(this.keys[mid] as string, key) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

const named = new Map<string, MemoryData>();

/** Forgets the data of the process-wide store `memory:NAME` (a store still open on it keeps it until closed). */
export function dropMemoryStore(name: string): void {
  named.delete(name);
}

/**
 * A store held in this process's memory, for unit tests: `memory:` is a fresh, empty store;
 * `memory:NAME` opens the data every other `memory:NAME` store of this process sees (closing
 * one leaves the data in place). Keys sort in code point order, each write bumps one
 * revision counter, and compares follow etcd's mod_revision (0 = absent), like the other
 * back ends. Nothing can fail but bad arguments and use after close.
 */
export class MemoryStore implements Store {
  readonly url: string;
  readonly #data: MemoryData;
  readonly #feeds = new Set<WatchFeed>();
  #roundTrips = 0;
  #closed = false;

  /** `name` empty → a private store; otherwise the process-wide store of that name. */
  constructor(name = '') {
    this.url = `memory:${name}`;
    if (name === '') {
      this.#data = new MemoryData();
    } else {
      let data = named.get(name);
      if (data === undefined) named.set(name, (data = new MemoryData()));
      this.#data = data;
    }
  }

  get roundTrips(): number {
    return this.#roundTrips;
  }

  async get(key: string): Promise<Entry | undefined> {
    checkKey(key);
    this.#enter();
    return this.#data.entries.get(key);
  }

  async getMany(keys: readonly string[]): Promise<(Entry | undefined)[]> {
    checkKeys(keys);
    this.#enter();
    return keys.map((key) => this.#data.entries.get(key));
  }

  async revision(): Promise<number> {
    this.#enter();
    return this.#data.rev;
  }

  async identity(): Promise<string> {
    this.#enter();
    return `memory ${this.#data.id}`;
  }

  /**
   * Replays the log from `fromRevision`, then every new revision as it is written (in the
   * txn that writes it: a watch sees a write before the writer's await returns).
   */
  watch(prefix: string, fromRevision: number, options?: WatchOptions): AsyncIterable<WatchEvent[]> {
    checkWatch(prefix, fromRevision);
    this.#checkOpen();
    const data = this.#data;
    const forward = (events: readonly WatchEvent[]): void => {
      feed.push(events.filter((e) => e.key.startsWith(prefix)));
    };
    const feed = new WatchFeed(() => {
      data.watchers.delete(forward);
      this.#feeds.delete(feed);
    }, options?.signal);
    if (feed.done) return feed;
    this.#feeds.add(feed);
    if (fromRevision < data.logFrom && fromRevision <= data.rev) {
      feed.fail(new StoreCompactedError(this.url, fromRevision, data.logFrom));
      return feed;
    }
    // Whole revisions, one batch each, as etcd delivers them.
    let batch: WatchEvent[] = [];
    for (const e of data.log) {
      if (e.modRevision < fromRevision || !e.key.startsWith(prefix)) continue;
      if (batch.length > 0 && (batch[0] as WatchEvent).modRevision !== e.modRevision) {
        feed.push(batch);
        batch = [];
      }
      batch.push(e);
    }
    feed.push(batch);
    data.watchers.add(forward);
    return feed;
  }

  async list(prefix: string, options?: ListOptions): Promise<Entry[]> {
    checkPrefix(prefix);
    checkListOptions(options);
    this.#enter();
    const { keys, entries } = this.#data;
    const limit = options?.limit ?? Infinity;
    const after = options?.after;
    let i = this.#data.lowerBound(prefix);
    if (after !== undefined && compareKeys(after, prefix) >= 0) {
      i = this.#data.lowerBound(after);
      if (keys[i] === after) i++;
    }
    const out: Entry[] = [];
    for (; i < keys.length && out.length < limit; i++) {
      const key = keys[i] as string;
      if (!key.startsWith(prefix)) break;
      out.push(entries.get(key) as Entry);
    }
    return out;
  }

  async snapshot(prefix: string): Promise<{ rev: number; entries: Entry[] }> {
    // Both reads run in this tick: no write can come between them.
    const entries = await this.list(prefix);
    return { rev: this.#data.rev, entries };
  }

  async txn(compares: readonly Compare[], ops: readonly Op[]): Promise<TxnResult> {
    checkTxn(compares, ops);
    this.#enter();
    const data = this.#data;
    if (!compares.every((c) => (data.entries.get(c.key)?.rev ?? 0) === c.rev)) {
      return { succeeded: false, rev: data.rev, current: compares.map((c) => data.entries.get(c.key)) };
    }
    // As in etcd, a txn that changes nothing (no ops, or deletes of absent keys) keeps the rev.
    const changes = ops.some((op) => op.type === 'put' || data.entries.has(op.key));
    if (!changes) return { succeeded: true, rev: data.rev };
    const rev = ++data.rev;
    const events: WatchEvent[] = [];
    for (const op of ops) {
      const i = data.lowerBound(op.key);
      const present = data.keys[i] === op.key;
      if (op.type === 'put') {
        if (!present) data.keys.splice(i, 0, op.key);
        data.entries.set(op.key, Object.freeze({ key: op.key, value: op.value, rev }));
        events.push(Object.freeze({ type: 'put', key: op.key, value: op.value, modRevision: rev }));
      } else if (present) {
        data.keys.splice(i, 1);
        data.entries.delete(op.key);
        events.push(Object.freeze({ type: 'delete', key: op.key, value: '', modRevision: rev }));
      }
    }
    data.record(events);
    return { succeeded: true, rev };
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const feed of [...this.#feeds]) feed.end();
  }

  #enter(): void {
    this.#checkOpen();
    this.#roundTrips++;
  }

  #checkOpen(): void {
    if (this.#closed) throw new StoreError(this.url, 'the store is closed');
  }
}
