/**
 * followPrefix on a real store: the initial listing, the events after it, a compaction between
 * the listing and the watch (relisted at once, the state neither losing nor repeating a write),
 * the back-off bounded and reset, relist() on demand, and an abort ending it promptly. Each
 * test works under its own random prefix; `compact` makes every revision up to the current one
 * unavailable to a watch (etcd: a compaction; SQLite and memory: writes past their change log).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { StoreCompactedError } from '../../src/store/errors.js';
import { followPrefix, type FollowBackoff, type PrefixFollow } from '../../src/store/follow-prefix.js';
import { listAll, listAllWithRevision } from '../../src/store/list-all.js';
import type { Store, WatchEvent } from '../../src/store/store.js';

export interface FollowSuiteOptions {
  /** Makes the history up to the store's current revision unavailable to a watch (writes outside `prefix` allowed). */
  readonly compact: (store: Store, prefix: string) => Promise<void>;
}

const WAIT_MS = 20_000;

async function until(what: string, ok: () => boolean | Promise<boolean>, waitMs = WAIT_MS): Promise<void> {
  const end = Date.now() + waitMs;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`not within ${waitMs} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** A consumer keeping a copy of the prefix: listings replace it, events change it; every call recorded. */
class Mirror {
  readonly state = new Map<string, { value: string; rev: number }>();
  readonly causes: unknown[] = [];
  readonly errors: { error: unknown; stage: string; retryInMs: number; at: number }[] = [];
  readonly listedAt: number[] = [];
  /** Revisions out of order or repeated since the last listing: must stay empty. */
  readonly disorder: string[] = [];
  last = 0;
  /** Listings that succeeded. */
  listed = 0;
  batches = 0;
  /** Throws instead of listing while > 0 (counted down), and in the batch handler while `failBatches` > 0. */
  failLists = 0;
  failBatches = 0;
  /** Runs inside the first listing, after the read. */
  afterFirstList: (() => Promise<void>) | undefined;

  constructor(
    readonly store: Store,
    readonly prefix: string,
  ) {}

  follow(signal: AbortSignal, backoff?: FollowBackoff): PrefixFollow {
    return followPrefix({
      store: this.store,
      prefix: this.prefix,
      signal,
      ...(backoff ? { backoff } : {}),
      list: async (cause) => {
        this.causes.push(cause);
        this.listedAt.push(Date.now());
        if (this.failLists > 0) {
          this.failLists--;
          throw new Error('datastore down (test)');
        }
        const { entries, rev } = await listAllWithRevision(this.store, this.prefix);
        this.state.clear();
        for (const e of entries) this.state.set(e.key, { value: e.value, rev: e.rev });
        this.last = rev;
        const hook = this.afterFirstList;
        this.afterFirstList = undefined;
        await hook?.();
        this.listed++;
        return rev;
      },
      onEvents: (events: WatchEvent[]) => {
        if (this.failBatches > 0) {
          this.failBatches--;
          throw new Error('consumer failed (test)');
        }
        this.batches++;
        let prev = this.last;
        for (const e of events) {
          if (!e.key.startsWith(this.prefix)) this.disorder.push(`${e.key} is outside the prefix`);
          if (e.modRevision <= this.last || e.modRevision < prev)
            this.disorder.push(`${e.key}@${e.modRevision} after ${prev} (listed or seen at ${this.last})`);
          prev = e.modRevision;
          if (e.type === 'put') this.state.set(e.key, { value: e.value, rev: e.modRevision });
          else this.state.delete(e.key);
        }
        this.last = Math.max(this.last, prev);
      },
      onError: (error, stage, retryInMs) => this.errors.push({ error, stage, retryInMs, at: Date.now() }),
    });
  }

  /** True when the copy equals the store's prefix. */
  async same(): Promise<boolean> {
    const now = await listAll(this.store, this.prefix);
    return now.length === this.state.size && now.every((e) => this.state.get(e.key)?.value === e.value && this.state.get(e.key)?.rev === e.rev);
  }
}

const put = (store: Store, key: string, value: string) => store.txn([], [{ type: 'put', key, value }]);

/** Defines `describe('followPrefix on <name>')`, each test on a store from `open()` (closed after). */
export function followPrefixSuite(name: string, open: () => Promise<Store>, options: FollowSuiteOptions): void {
  /** Runs `fn` on a fresh store and prefix; `abort` is aborted before the store closes, whatever happens. */
  const withStore = async (fn: (store: Store, prefix: string, abort: AbortController) => Promise<void>): Promise<void> => {
    const store = await open();
    const abort = new AbortController();
    try {
      await fn(store, `follow-${randomUUID()}/`, abort);
    } finally {
      abort.abort();
      await store.close();
    }
  };

  describe(`followPrefix on ${name}`, () => {
    it('lists first, then delivers every later change under the prefix once, in revision order', { timeout: 60_000 }, () =>
      withStore(async (store, p, ac) => {
        await put(store, `${p}a`, '1');
        await put(store, `${p}b`, '1');
        const m = new Mirror(store, p);
        const f = m.follow(ac.signal);
        await until('the first listing', () => m.listed === 1);
        await put(store, `${p}a`, '2');
        await store.txn(
          [],
          [
            { type: 'delete', key: `${p}b` },
            { type: 'put', key: `${p}c`, value: '1' },
          ],
        );
        await put(store, `${p.slice(0, -1)}-outside`, 'x');
        await put(store, `${p}d`, '1');
        await until('the copy matches the store', () => m.same());
        assert.ok(m.state.has(`${p}d`) && !m.state.has(`${p}b`));
        ac.abort();
        await f.done;
        assert.deepEqual(m.causes, [undefined]);
        assert.deepEqual(m.disorder, []);
        assert.deepEqual(m.errors, []);
      }),
    );

    it('a compaction between the listing and the watch: relists at once, nothing lost or repeated, and follows on', { timeout: 240_000 }, () =>
      withStore(async (store, p, ac) => {
        await put(store, `${p}a`, '1');
        await put(store, `${p}b`, '1');
        const m = new Mirror(store, p);
        // Written after the first listing read the prefix, then compacted away before the watch starts.
        m.afterFirstList = async () => {
          await put(store, `${p}a`, '2');
          await store.txn([], [{ type: 'delete', key: `${p}b` }]);
          await put(store, `${p}c`, '1');
          await options.compact(store, p);
        };
        const f = m.follow(ac.signal);
        // `compact` may write 10,000 revisions (SQLite): slow on a loaded machine.
        await until('a second listing', () => m.listed === 2, 200_000);
        assert.equal(m.causes[0], undefined);
        assert.ok(m.causes[1] instanceof StoreCompactedError, `the second listing's cause: ${String(m.causes[1])}`);
        assert.deepEqual(m.errors, [], 'a compaction is no failure: no back-off');
        await until('the copy matches the store after the relist', () => m.same());
        assert.deepEqual([...m.state.keys()].sort(), [`${p}a`, `${p}c`]);
        await put(store, `${p}e`, '1');
        await until('a write after the relist seen', () => m.state.has(`${p}e`));
        assert.ok(await m.same());
        ac.abort();
        await f.done;
        assert.equal(m.causes.length, 2);
        assert.deepEqual(m.disorder, []);
      }),
    );

    it('failed listings back off from firstMs doubling to maxMs; a delivered batch resets it; a failed batch relists with its error', { timeout: 60_000 }, () =>
      withStore(async (store, p, ac) => {
        const m = new Mirror(store, p);
        m.failLists = 6;
        const f = m.follow(ac.signal, { firstMs: 20, maxMs: 80 });
        await until('a listing that succeeds', () => m.listed === 1);
        assert.deepEqual(
          m.errors.map((e) => [e.stage, e.retryInMs]),
          [20, 40, 80, 80, 80, 80].map((ms) => ['list', ms]),
        );
        for (let i = 0; i < 6; i++) {
          const waited = (m.listedAt[i + 1] as number) - (m.errors[i]?.at as number);
          assert.ok(waited >= (m.errors[i]?.retryInMs as number) - 2, `listing ${i + 2} came ${waited} ms after failure ${i + 1}`);
        }
        assert.deepEqual(m.causes, Array(7).fill(undefined), 'a retried listing gets the same cause');
        await put(store, `${p}a`, '1');
        await until('the write seen in a batch', () => m.batches === 1 && m.state.has(`${p}a`));
        m.failBatches = 1;
        await put(store, `${p}b`, '1');
        await until('a relist after the failed batch', () => m.listed === 2);
        assert.equal((m.causes[7] as Error).message, 'consumer failed (test)');
        assert.deepEqual(
          m.errors.slice(6).map((e) => [e.stage, e.retryInMs]),
          [['watch', 20]],
          'reset by the batch delivered',
        );
        await until('the copy matches the store', () => m.same());
        ac.abort();
        await f.done;
        assert.deepEqual(m.disorder, []);
      }),
    );

    it('relist(cause) ends the watch and lists again with that cause; following goes on', { timeout: 60_000 }, () =>
      withStore(async (store, p, ac) => {
        const m = new Mirror(store, p);
        const f = m.follow(ac.signal);
        await until('the first listing', () => m.listed === 1);
        f.relist('stale');
        await until('a second listing', () => m.listed === 2);
        assert.equal(m.causes[1], 'stale');
        await put(store, `${p}a`, '1');
        await until('the write seen', () => m.state.has(`${p}a`));
        ac.abort();
        await f.done;
        assert.deepEqual(m.errors, []);
      }),
    );

    it('an abort ends it promptly: while watching a quiet prefix, and in the middle of a long back-off', { timeout: 60_000 }, () =>
      withStore(async (store, p, ac) => {
        const quiet = new Mirror(store, p);
        const ac1 = new AbortController();
        ac.signal.addEventListener('abort', () => ac1.abort());
        const f1 = quiet.follow(ac1.signal);
        await until('the first listing', () => quiet.listed === 1);
        await new Promise((r) => setTimeout(r, 50));
        let t0 = Date.now();
        ac1.abort();
        await f1.done;
        const watching = Date.now() - t0;
        await put(store, `${p}late`, '1');
        await new Promise((r) => setTimeout(r, 50));
        assert.equal(quiet.batches, 0, 'nothing delivered after the abort');

        const down = new Mirror(store, p);
        down.failLists = 1;
        const ac2 = new AbortController();
        ac.signal.addEventListener('abort', () => ac2.abort());
        const f2 = down.follow(ac2.signal, { firstMs: 60_000, maxMs: 60_000 });
        await until('the failed listing', () => down.errors.length === 1);
        t0 = Date.now();
        ac2.abort();
        await f2.done;
        const pausing = Date.now() - t0;
        assert.ok(watching < 1000 && pausing < 1000, `ended ${watching} ms after the abort while watching, ${pausing} ms while pausing`);
        assert.equal(down.causes.length, 1);
      }),
    );

    it('an abort at any moment around the first listing ends it (0 to 12 microtasks after the listing returns)', { timeout: 60_000 }, () =>
      withStore(async (store, p) => {
        for (let ticks = 0; ticks <= 12; ticks++) {
          const ac = new AbortController();
          const f = followPrefix({
            store,
            prefix: p,
            signal: ac.signal,
            list: async () => {
              const rev = await store.revision();
              void (async () => {
                for (let i = 0; i < ticks; i++) await Promise.resolve();
                ac.abort();
              })();
              return rev;
            },
            onEvents: () => {},
          });
          const ended = await Promise.race([f.done.then(() => true), new Promise((r) => setTimeout(() => r(false), 2000))]);
          assert.ok(ended, `still following 2 s after an abort ${ticks} microtasks after the listing`);
        }
      }),
    );

    it('ends when the store is closed', { timeout: 60_000 }, async () => {
      const store = await open();
      const m = new Mirror(store, `follow-${randomUUID()}/`);
      const f = m.follow(new AbortController().signal);
      await until('the first listing', () => m.listed === 1);
      await new Promise((r) => setTimeout(r, 20));
      await store.close();
      await f.done;
    });
  });
}
