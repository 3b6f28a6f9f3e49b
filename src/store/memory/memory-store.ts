import { checkKey, checkListOptions, checkPrefix, checkTxn } from '../check-input.js';
import { StoreError } from '../errors.js';
import { compareKeys } from '../key-order.js';
import type { Compare, Entry, ListOptions, Op, Store, TxnResult } from '../store.js';

/** The data behind one memory store; named stores share one of these per process. */
class MemoryData {
  readonly entries = new Map<string, Entry>();
  /** Every key, sorted by compareKeys. */
  readonly keys: string[] = [];
  rev = 0;

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
    for (const op of ops) {
      const i = data.lowerBound(op.key);
      const present = data.keys[i] === op.key;
      if (op.type === 'put') {
        if (!present) data.keys.splice(i, 0, op.key);
        data.entries.set(op.key, Object.freeze({ key: op.key, value: op.value, rev }));
      } else if (present) {
        data.keys.splice(i, 1);
        data.entries.delete(op.key);
      }
    }
    return { succeeded: true, rev };
  }

  async close(): Promise<void> {
    this.#closed = true;
  }

  #enter(): void {
    if (this.#closed) throw new StoreError(this.url, 'the store is closed');
    this.#roundTrips++;
  }
}
