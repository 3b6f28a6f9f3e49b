/**
 * The behaviour every Store back end must show, as one node:test suite run against real
 * instances (memory, a SQLite file, a live etcd). Each test works under its own random key
 * prefix, so back ends whose `open` returns stores on shared data (etcd) need no cleanup, but
 * tests assume no other writer touches the store while they run (they compare revisions).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { MAX_TXN_OPS } from '../../src/store/check-input.js';
import { StoreError } from '../../src/store/errors.js';
import { listAll, listAllWithRevision } from '../../src/store/list-all.js';
import type { Entry, Store, TxnResult, WatchEvent } from '../../src/store/store.js';

/** Sizes the suite uses; slower back ends may ask for less work. */
export interface ConformanceOptions {
  /** Async workers racing on one counter (default 8). */
  readonly workers?: number;
  /** Successful increments each worker makes (default 50). */
  readonly incrementsPerWorker?: number;
  /** Characters in the large-value test (default 1,000,000; etcd's request limit is 1.5 MiB). */
  readonly bigValueChars?: number;
  /**
   * Another store on the same data as `store`, through its own connection (default: `open()`
   * again, right for back ends whose stores all share one data set, as etcd's do).
   */
  readonly peer?: (store: Store) => Promise<Store>;
}

/** How long a watch test waits for events it expects: generous, the machine may be loaded. */
const WATCH_WAIT_MS = 20_000;

/**
 * Reads `watch` until `n` events arrived (failing after WATCH_WAIT_MS with what came), then
 * stops it; returns the events and the batches they came in.
 */
export async function takeEvents(watch: AsyncIterable<WatchEvent[]>, n: number): Promise<{ events: WatchEvent[]; batches: WatchEvent[][] }> {
  const events: WatchEvent[] = [];
  const batches: WatchEvent[][] = [];
  const it = watch[Symbol.asyncIterator]();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`only ${events.length} of ${n} watch events within ${WATCH_WAIT_MS} ms: ${JSON.stringify(events)}`)),
      WATCH_WAIT_MS,
    );
  });
  try {
    while (events.length < n) {
      const r = await Promise.race([it.next(), timeout]);
      if (r.done) throw new Error(`the watch ended after ${events.length} of ${n} events: ${JSON.stringify(events)}`);
      batches.push(r.value);
      events.push(...r.value);
    }
  } finally {
    clearTimeout(timer);
    await it.return?.();
  }
  return { events, batches };
}

/** Defines `describe(name)` with the conformance tests, each on a store from `open()`. */
export function storeConformance(name: string, open: () => Promise<Store>, options: ConformanceOptions = {}): void {
  const workers = options.workers ?? 8;
  const increments = options.incrementsPerWorker ?? 50;
  const bigValueChars = options.bigValueChars ?? 1_000_000;
  const peer = options.peer ?? (() => open());

  /** Runs `body` on a fresh store and a fresh key prefix, closing the store afterwards. */
  const withStore = (body: (store: Store, p: string) => Promise<void>) => async () => {
    const store = await open();
    try {
      await body(store, `conf-${randomUUID().slice(0, 8)}/`);
    } finally {
      await store.close();
    }
  };
  const put = async (store: Store, key: string, value: string): Promise<number> => {
    const r = await store.txn([], [{ type: 'put', key, value }]);
    assert.equal(r.succeeded, true);
    return r.rev;
  };
  const currentRev = async (store: Store): Promise<number> => (await store.txn([], [])).rev;

  describe(`${name} store conformance`, () => {
    it(
      'get of an absent key is undefined',
      withStore(async (s, p) => {
        assert.equal(await s.get(`${p}nothing`), undefined);
      }),
    );

    it(
      'a put is read back with the txn revision, and a later put gets a higher one',
      withStore(async (s, p) => {
        const r1 = await s.txn([], [{ type: 'put', key: `${p}a`, value: 'one' }]);
        assert.deepEqual(r1, { succeeded: true, rev: r1.rev });
        assert.ok(r1.rev > 0);
        assert.deepEqual(await s.get(`${p}a`), { key: `${p}a`, value: 'one', rev: r1.rev });
        const r2 = await put(s, `${p}a`, 'two');
        assert.ok(r2 > r1.rev, `second put rev ${r2} must exceed ${r1.rev}`);
        assert.deepEqual(await s.get(`${p}a`), { key: `${p}a`, value: 'two', rev: r2 });
      }),
    );

    it(
      'every key put by one txn carries the txn revision, and the revision moves once',
      withStore(async (s, p) => {
        const before = await currentRev(s);
        const r = await s.txn(
          [],
          [
            { type: 'put', key: `${p}x`, value: '1' },
            { type: 'put', key: `${p}y`, value: '2' },
            { type: 'put', key: `${p}z`, value: '3' },
          ],
        );
        assert.equal(r.rev, before + 1);
        assert.deepEqual(
          (await s.list(p)).map((e) => e.rev),
          [r.rev, r.rev, r.rev],
        );
      }),
    );

    it(
      'delete removes a key and bumps the revision; a txn that changes nothing keeps it',
      withStore(async (s, p) => {
        const rPut = await put(s, `${p}d`, 'v');
        const rDel = await s.txn([], [{ type: 'delete', key: `${p}d` }]);
        assert.deepEqual(rDel, { succeeded: true, rev: rPut + 1 });
        assert.equal(await s.get(`${p}d`), undefined);
        assert.deepEqual(await s.txn([], [{ type: 'delete', key: `${p}d` }]), { succeeded: true, rev: rDel.rev });
        assert.deepEqual(await s.txn([{ key: `${p}d`, rev: 0 }], []), { succeeded: true, rev: rDel.rev });
        assert.equal(await currentRev(s), rDel.rev);
      }),
    );

    it(
      'compare rev 0 holds for an absent key and fails for a present one',
      withStore(async (s, p) => {
        const r = await s.txn([{ key: `${p}k`, rev: 0 }], [{ type: 'put', key: `${p}k`, value: 'first' }]);
        assert.equal(r.succeeded, true);
        const again = await s.txn([{ key: `${p}k`, rev: 0 }], [{ type: 'put', key: `${p}k`, value: 'second' }]);
        assert.deepEqual(again, {
          succeeded: false,
          rev: r.rev,
          current: [{ key: `${p}k`, value: 'first', rev: r.rev }],
        });
        assert.equal((await s.get(`${p}k`))?.value, 'first');
      }),
    );

    it(
      'compare on the current rev holds; a stale rev applies nothing and reports current entries',
      withStore(async (s, p) => {
        const r1 = await put(s, `${p}c`, 'v1');
        const r2 = await s.txn([{ key: `${p}c`, rev: r1 }], [{ type: 'put', key: `${p}c`, value: 'v2' }]);
        assert.equal(r2.succeeded, true);
        const failed = await s.txn(
          [
            { key: `${p}c`, rev: r1 },
            { key: `${p}absent`, rev: 0 },
            { key: `${p}gone`, rev: 7 },
          ],
          [
            { type: 'put', key: `${p}c`, value: 'v3' },
            { type: 'put', key: `${p}new`, value: 'n' },
          ],
        );
        assert.equal(failed.succeeded, false);
        assert.equal(failed.rev, r2.rev);
        assert.deepEqual(failed.current, [{ key: `${p}c`, value: 'v2', rev: r2.rev }, undefined, undefined]);
        assert.equal((await s.get(`${p}c`))?.value, 'v2');
        assert.equal(await s.get(`${p}new`), undefined);
        assert.equal(await currentRev(s), r2.rev);
      }),
    );

    it(
      'all compares must hold: one failing compare among holding ones applies nothing',
      withStore(async (s, p) => {
        const ra = await put(s, `${p}a`, 'a');
        const rb = await put(s, `${p}b`, 'b');
        const r = await s.txn(
          [
            { key: `${p}a`, rev: ra },
            { key: `${p}b`, rev: rb - 1 },
          ],
          [
            { type: 'delete', key: `${p}a` },
            { type: 'put', key: `${p}b`, value: 'B' },
          ],
        );
        assert.equal(r.succeeded, false);
        assert.deepEqual(
          r.current?.map((e) => e?.rev),
          [ra, rb],
        );
        assert.deepEqual(
          (await s.list(p)).map((e) => e.value),
          ['a', 'b'],
        );
      }),
    );

    it(
      'applies several puts and deletes atomically, visible together',
      withStore(async (s, p) => {
        await put(s, `${p}old`, 'o');
        const r = await s.txn(
          [
            { key: `${p}old`, rev: (await s.get(`${p}old`))?.rev ?? -1 },
            { key: `${p}n1`, rev: 0 },
          ],
          [
            { type: 'delete', key: `${p}old` },
            { type: 'put', key: `${p}n1`, value: '1' },
            { type: 'put', key: `${p}n2`, value: '2' },
          ],
        );
        assert.equal(r.succeeded, true);
        assert.deepEqual(await s.list(p), [
          { key: `${p}n1`, value: '1', rev: r.rev },
          { key: `${p}n2`, value: '2', rev: r.rev },
        ]);
      }),
    );

    it(
      `accepts ${MAX_TXN_OPS} ops in one txn and rejects a txn that writes one key twice`,
      withStore(async (s, p) => {
        const ops = Array.from({ length: MAX_TXN_OPS }, (_, i) => ({ type: 'put' as const, key: `${p}${String(i).padStart(3, '0')}`, value: `${i}` }));
        assert.equal((await s.txn([], ops)).succeeded, true);
        assert.equal((await s.list(p)).length, MAX_TXN_OPS);
        await assert.rejects(s.txn([], [...ops, { type: 'put', key: `${p}x`, value: '' }]), RangeError);
        await assert.rejects(
          s.txn(
            [],
            [
              { type: 'put', key: `${p}x`, value: '1' },
              { type: 'delete', key: `${p}x` },
            ],
          ),
          TypeError,
        );
        assert.equal(await s.get(`${p}x`), undefined);
      }),
    );

    it(
      'rejects empty keys, lone surrogates and negative revisions before touching the engine',
      withStore(async (s, p) => {
        const trips = s.roundTrips;
        await assert.rejects(s.get(''), TypeError);
        await assert.rejects(s.txn([], [{ type: 'put', key: `${p}\ud800`, value: '' }]), TypeError);
        await assert.rejects(s.txn([], [{ type: 'put', key: `${p}k`, value: 'x\udc00' }]), TypeError);
        await assert.rejects(s.txn([{ key: `${p}k`, rev: -1 }], []), RangeError);
        await assert.rejects(s.list(p, { limit: -1 }), RangeError);
        assert.equal(s.roundTrips, trips);
      }),
    );

    it(
      'snapshot reads a whole prefix at one revision, across pages, while a txn changes its first and last keys',
      withStore(async (s, p) => {
        const n = 1030; // more than one etcd page (LIST_PAGE)
        const key = (i: number) => `${p}${String(i).padStart(4, '0')}`;
        for (let i = 0; i < n; i += MAX_TXN_OPS) {
          const ops = Array.from({ length: Math.min(MAX_TXN_OPS, n - i) }, (_, j) => ({ type: 'put' as const, key: key(i + j), value: 'old' }));
          assert.equal((await s.txn([], ops)).succeeded, true);
        }
        const before = await s.revision();
        const snap = await s.snapshot(p);
        assert.equal(snap.rev, before);
        assert.deepEqual(snap.entries, await s.list(p));
        assert.equal(snap.entries.length, n);
        // One txn writes the first and the last key: a snapshot shows both or neither.
        const [racing] = await Promise.all([
          s.snapshot(p),
          s.txn(
            [],
            [
              { type: 'put', key: key(0), value: 'new' },
              { type: 'put', key: key(n - 1), value: 'new' },
              { type: 'put', key: `${p}9999`, value: 'new' },
            ],
          ),
        ]);
        const values = [racing.entries[0]?.value, racing.entries[n - 1]?.value, racing.entries[n]?.value ?? 'old'];
        assert.ok(
          values.every((v) => v === values[0]),
          `a torn snapshot: ${values.join(',')} at rev ${racing.rev}`,
        );
        assert.ok(racing.entries.every((e) => e.rev <= racing.rev));
        assert.deepEqual((await s.snapshot(`${p}zz`)).entries, []);
      }),
    );

    it(
      'list returns a prefix in key order, honouring limit and after',
      withStore(async (s, p) => {
        const keys = ['m', 'a', 'z', 'b/1', 'b', 'aa', 'A', '0'];
        await s.txn(
          [],
          keys.map((k) => ({ type: 'put' as const, key: p + k, value: k })),
        );
        const sorted = ['0', 'A', 'a', 'aa', 'b', 'b/1', 'm', 'z'];
        assert.deepEqual(
          (await s.list(p)).map((e) => e.value),
          sorted,
        );
        assert.deepEqual(
          (await s.list(p, { limit: 3 })).map((e) => e.value),
          sorted.slice(0, 3),
        );
        assert.deepEqual(
          (await s.list(p, { after: `${p}aa` })).map((e) => e.value),
          sorted.slice(4),
        );
        assert.deepEqual(
          (await s.list(p, { after: `${p}ab`, limit: 2 })).map((e) => e.value),
          ['b', 'b/1'],
        );
        assert.deepEqual(await s.list(p, { after: `${p}z` }), []);
        assert.deepEqual(await s.list(p, { limit: 0 }), []);
        // an `after` before the prefix starts at the prefix; one past it ends the listing
        assert.deepEqual((await s.list(p, { after: '' })).length, sorted.length);
        assert.deepEqual(
          (await s.list(`${p}b`, { after: `${p}a` })).map((e) => e.value),
          ['b', 'b/1'],
        );
        assert.deepEqual(await s.list(`${p}b`, { after: `${p}c` }), []);
        // paging with limit + after visits every key exactly once
        const paged: string[] = [];
        for (let after: string | undefined, n = 0; n < 20; n++) {
          const page = await s.list(p, { limit: 3, ...(after === undefined ? {} : { after }) });
          paged.push(...page.map((e) => e.value));
          if (page.length < 3) break;
          after = page[page.length - 1]?.key;
        }
        assert.deepEqual(paged, sorted);
      }),
    );

    it(
      'list treats the prefix as a plain string: "/" and a prefix of another key group',
      withStore(async (s, p) => {
        const keys = ['pools/a', 'pools/a/b', 'pools/ab', 'pools/a0', 'pools/a.', 'pool', 'poolsx', 'pools'];
        await s.txn(
          [],
          keys.map((k) => ({ type: 'put' as const, key: p + k, value: k })),
        );
        assert.deepEqual(
          (await s.list(`${p}pools/a/`)).map((e) => e.value),
          ['pools/a/b'],
        );
        assert.deepEqual(
          (await s.list(`${p}pools/a`)).map((e) => e.value),
          ['pools/a', 'pools/a.', 'pools/a/b', 'pools/a0', 'pools/ab'],
        );
        assert.deepEqual((await s.list(`${p}pools/`)).length, 5);
        assert.deepEqual(
          (await s.list(`${p}pool`)).map((e) => e.value),
          ['pool', 'pools', 'pools/a', 'pools/a.', 'pools/a/b', 'pools/a0', 'pools/ab', 'poolsx'],
        );
        assert.deepEqual(await s.list(`${p}pools/b`), []);
      }),
    );

    it(
      'keys are unicode and sort by code point (UTF-8 byte order)',
      withStore(async (s, p) => {
        // U+1F600 is a surrogate pair in UTF-16, which sorts it below U+FFFD there; in UTF-8 (etcd, SQLite) it is above.
        const keys = ['\u{1F600}', '\uFFFD', '日本', 'ü', 'u', 'ü/x', '\u{1F600}/\u{10FFFF}'];
        await s.txn(
          [],
          keys.map((k) => ({ type: 'put' as const, key: p + k, value: k })),
        );
        const expected = ['u', 'ü', 'ü/x', '日本', '\uFFFD', '\u{1F600}', '\u{1F600}/\u{10FFFF}'];
        assert.deepEqual(
          (await s.list(p)).map((e) => e.key),
          expected.map((k) => p + k),
        );
        assert.deepEqual(
          (await s.list(`${p}\u{1F600}`)).map((e) => e.value),
          ['\u{1F600}', '\u{1F600}/\u{10FFFF}'],
        );
        assert.deepEqual(
          (await s.list(`${p}ü`)).map((e) => e.value),
          ['ü', 'ü/x'],
        );
        assert.deepEqual(
          (await s.list(p, { after: `${p}\uFFFD` })).map((e) => e.value),
          expected.slice(5),
        );
        assert.equal((await s.get(`${p}日本`))?.value, '日本');
      }),
    );

    it(
      'values round-trip exactly: empty, JSON, unicode, control characters',
      withStore(async (s, p) => {
        const values = ['', ' ', '{"a":[1,2,{"b":null}],"c":"\\u0000\\n"}', 'ünï©ødé 日本 \u{1F600}', 'nul\u0000inside', '\n\t\r', '"', '\\'];
        await s.txn(
          [],
          values.map((v, i) => ({ type: 'put' as const, key: `${p}${i}`, value: v })),
        );
        for (const [i, v] of values.entries()) assert.equal((await s.get(`${p}${i}`))?.value, v, `value ${i}`);
        assert.deepEqual(
          (await s.list(p)).map((e) => e.value),
          values,
        );
      }),
    );

    it(
      `stores and lists a value of ${bigValueChars} characters`,
      withStore(async (s, p) => {
        const big = JSON.stringify({ blob: 'x'.repeat(bigValueChars - 40), tail: 'ü' });
        const r = await put(s, `${p}big`, big);
        const e = await s.get(`${p}big`);
        assert.equal(e?.rev, r);
        assert.equal(e?.value.length, big.length);
        assert.ok(e?.value === big, 'big value differs');
        assert.equal((await s.list(p))[0]?.value === big, true);
      }),
    );

    it(
      `racing CAS increments from ${workers} workers lose no update`,
      withStore(async (s, p) => {
        const key = `${p}counter`;
        let successes = 0;
        let conflicts = 0;
        const worker = async (): Promise<void> => {
          let seen: Entry | undefined = await s.get(key);
          for (let done = 0, tries = 0; done < increments; tries++) {
            assert.ok(tries < increments * workers * 4, 'too many CAS retries');
            const n = seen === undefined ? 0 : Number(seen.value);
            const r: TxnResult = await s.txn([{ key, rev: seen?.rev ?? 0 }], [{ type: 'put', key, value: String(n + 1) }]);
            if (r.succeeded) {
              successes++;
              done++;
              seen = { key, value: String(n + 1), rev: r.rev };
            } else {
              conflicts++;
              seen = r.current?.[0];
            }
          }
        };
        await Promise.all(Array.from({ length: workers }, worker));
        assert.equal(successes, workers * increments);
        assert.equal((await s.get(key))?.value, String(workers * increments));
        // conflicts prove the workers really raced (they all start from the same read)
        if (workers > 1) assert.ok(conflicts > 0, 'the workers never conflicted');
      }),
    );

    it(
      'counts one round trip per get, list and txn',
      withStore(async (s, p) => {
        await s.get(`${p}warm-up`); // a store's first call may cost more (etcd with auth authenticates first)
        const before = s.roundTrips;
        await s.get(`${p}a`);
        await s.list(p);
        await s.txn([{ key: `${p}a`, rev: 0 }], [{ type: 'put', key: `${p}a`, value: '' }]);
        await s.txn([{ key: `${p}a`, rev: 0 }], []);
        assert.equal(s.roundTrips, before + 4);
      }),
    );

    it(
      'getMany reads keys in the order asked, undefined where absent, duplicates allowed',
      withStore(async (s, p) => {
        const r = await s.txn(
          [],
          [
            { type: 'put', key: `${p}a`, value: '1' },
            { type: 'put', key: `${p}b`, value: '2' },
          ],
        );
        assert.deepEqual(await s.getMany([`${p}b`, `${p}none`, `${p}a`, `${p}b`]), [
          { key: `${p}b`, value: '2', rev: r.rev },
          undefined,
          { key: `${p}a`, value: '1', rev: r.rev },
          { key: `${p}b`, value: '2', rev: r.rev },
        ]);
        assert.deepEqual(await s.getMany([]), []);
        const before = s.roundTrips;
        await s.getMany(Array.from({ length: MAX_TXN_OPS }, (_, i) => `${p}k${i}`));
        assert.equal(s.roundTrips, before + 1, `one round trip for ${MAX_TXN_OPS} keys`);
        const trips = s.roundTrips;
        await assert.rejects(s.getMany([`${p}a`, '']), TypeError);
        assert.equal(s.roundTrips, trips);
      }),
    );

    it(
      'getMany reads more keys than one txn may carry, all of them, and changes nothing',
      withStore(async (s, p) => {
        const n = MAX_TXN_OPS * 2 + 7;
        const keys = Array.from({ length: n }, (_, i) => `${p}${String(i).padStart(4, '0')}`);
        for (let i = 0; i < n; i += MAX_TXN_OPS) {
          await s.txn(
            [],
            keys
              .slice(i, i + MAX_TXN_OPS)
              .filter((_, j) => (i + j) % 3 !== 0)
              .map((key) => ({ type: 'put' as const, key, value: key })),
          );
        }
        const rev = await s.revision();
        const got = await s.getMany(keys);
        assert.equal(got.length, n);
        got.forEach((e, i) => assert.equal(e?.value, i % 3 === 0 ? undefined : keys[i], `key ${i}`));
        assert.equal(await s.revision(), rev, 'a read moves no revision');
      }),
    );

    it(
      'identity is one non-empty text for the data, the same through another connection, and moves no revision',
      withStore(async (s, p) => {
        await put(s, `${p}i`, 'v');
        const rev = await s.revision();
        const id = await s.identity();
        assert.equal(typeof id, 'string');
        assert.ok(id.length > 0);
        assert.equal(await s.identity(), id, 'stable');
        const other = await peer(s);
        try {
          assert.equal(await other.identity(), id, 'the same data answers the same identity');
        } finally {
          await other.close();
        }
        assert.equal(await s.revision(), rev, 'asking moves no revision');
      }),
    );

    it(
      "revision is the last write's and moves only with writes",
      withStore(async (s, p) => {
        const r = await put(s, `${p}r`, 'v');
        assert.equal(await s.revision(), r);
        await s.get(`${p}r`);
        await s.txn([{ key: `${p}r`, rev: 0 }], [{ type: 'put', key: `${p}r`, value: 'no' }]);
        assert.equal(await s.revision(), r);
      }),
    );

    it(
      'listAll pages a prefix and gives a revision to watch after it from',
      withStore(async (s, p) => {
        const keys = Array.from({ length: 25 }, (_, i) => `${p}${String(i).padStart(2, '0')}`);
        await s.txn(
          [],
          keys.map((key) => ({ type: 'put' as const, key, value: key })),
        );
        await put(s, `${p.slice(0, -1)}0/outside`, 'x');
        const rev = await s.revision();
        assert.deepEqual(
          (await listAll(s, p, 4)).map((e) => e.key),
          keys,
        );
        assert.deepEqual(
          (await listAll(s, p, 5)).map((e) => e.key),
          keys,
          'a last page that is full',
        );
        const listing = await listAllWithRevision(s, p, 4);
        assert.deepEqual(
          listing.entries.map((e) => e.key),
          keys,
        );
        assert.equal(listing.rev, rev);
      }),
    );

    it(
      'watch reports puts and deletes in order, a txn as one batch, each once, with the value and revision',
      withStore(async (s, p) => {
        const from = (await s.revision()) + 1;
        const watch = s.watch(p, from);
        const r1 = await put(s, `${p}a`, 'one');
        const r2 = (
          await s.txn(
            [],
            [
              { type: 'put', key: `${p}b`, value: 'two' },
              { type: 'delete', key: `${p}a` },
              { type: 'delete', key: `${p}absent` },
            ],
          )
        ).rev;
        const r3 = await put(s, `${p}b`, 'three');
        const { events, batches } = await takeEvents(watch, 4);
        assert.deepEqual(events, [
          { type: 'put', key: `${p}a`, value: 'one', modRevision: r1 },
          { type: 'put', key: `${p}b`, value: 'two', modRevision: r2 },
          { type: 'delete', key: `${p}a`, value: '', modRevision: r2 },
          { type: 'put', key: `${p}b`, value: 'three', modRevision: r3 },
        ]);
        assert.deepEqual(
          batches.map((b) => b.map((e) => e.modRevision)),
          [[r1], [r2, r2], [r3]],
        );
      }),
    );

    it(
      'watch from a past revision replays the history since then, then goes on live',
      withStore(async (s, p) => {
        const r1 = await put(s, `${p}x`, '1');
        const r2 = await put(s, `${p}x`, '2');
        await put(s, `${p}y`, '3');
        const watch = s.watch(p, r2);
        const later = put(s, `${p}x`, '4');
        const { events } = await takeEvents(watch, 3);
        assert.deepEqual(
          events.map((e) => [e.key, e.value]),
          [
            [`${p}x`, '2'],
            [`${p}y`, '3'],
            [`${p}x`, '4'],
          ],
        );
        assert.ok(events.every((e) => e.modRevision > r1));
        assert.equal(events[2]?.modRevision, await later);
      }),
    );

    it(
      'watch sees only its prefix (a plain string prefix)',
      withStore(async (s, p) => {
        const from = (await s.revision()) + 1;
        const watch = s.watch(`${p}pools/a`, from);
        for (const k of ['pools/b', 'pools/a', 'pool', 'pools/ab', 'x/pools/a', 'pools/a/1']) await put(s, p + k, k);
        const { events } = await takeEvents(watch, 3);
        assert.deepEqual(
          events.map((e) => e.value),
          ['pools/a', 'pools/ab', 'pools/a/1'],
        );
      }),
    );

    it(
      'watch sees the writes of another connection to the same data',
      withStore(async (s, p) => {
        const other = await peer(s);
        try {
          const from = (await s.revision()) + 1;
          const watch = s.watch(p, from);
          const mine = await put(s, `${p}mine`, 'a');
          const theirs = await put(other, `${p}theirs`, 'b');
          const gone = (await other.txn([], [{ type: 'delete', key: `${p}mine` }])).rev;
          const { events } = await takeEvents(watch, 3);
          assert.deepEqual(events, [
            { type: 'put', key: `${p}mine`, value: 'a', modRevision: mine },
            { type: 'put', key: `${p}theirs`, value: 'b', modRevision: theirs },
            { type: 'delete', key: `${p}mine`, value: '', modRevision: gone },
          ]);
          // and the reverse: a watch on the other connection sees this one's writes
          const back = other.watch(p, gone + 1);
          const last = await put(s, `${p}back`, 'c');
          assert.deepEqual((await takeEvents(back, 1)).events, [{ type: 'put', key: `${p}back`, value: 'c', modRevision: last }]);
        } finally {
          await other.close();
        }
      }),
    );

    it(
      'an aborted watch ends its iteration, and one aborted before it starts yields nothing',
      withStore(async (s, p) => {
        const from = (await s.revision()) + 1;
        const ac = new AbortController();
        const watch = s.watch(p, from, { signal: ac.signal });
        await put(s, `${p}1`, 'a');
        const seen: WatchEvent[] = [];
        for await (const batch of watch) {
          seen.push(...batch);
          ac.abort();
          await put(s, `${p}2`, 'b'); // after the abort: never delivered
        }
        assert.deepEqual(
          seen.map((e) => e.value),
          ['a'],
        );
        const dead = new AbortController();
        dead.abort();
        const none: WatchEvent[][] = [];
        for await (const batch of s.watch(p, 1, { signal: dead.signal })) none.push(batch);
        assert.deepEqual(none, []);
        // several watches at once, one stopped by break: the others go on
        const a = s.watch(p, from);
        const b = s.watch(p, from);
        for await (const _ of a) break;
        assert.equal((await takeEvents(b, 2)).events.length, 2);
      }),
    );

    it(
      'closing the store ends its watches; watch rejects bad arguments',
      withStore(async (s, p) => {
        assert.throws(() => s.watch(p, 0), RangeError);
        assert.throws(() => s.watch(p, 1.5), RangeError);
        assert.throws(() => s.watch(`${p}\ud800`, 1), TypeError);
        const other = await peer(s);
        const watch = other.watch(p, (await other.revision()) + 1);
        const done = (async () => {
          const seen: WatchEvent[] = [];
          for await (const batch of watch) seen.push(...batch);
          return seen;
        })();
        await other.close();
        assert.deepEqual(await done, []);
        assert.throws(() => other.watch(p, 1), StoreError);
      }),
    );

    it('close is idempotent and later calls fail with StoreError', async () => {
      const s = await open();
      await s.close();
      await s.close();
      await assert.rejects(s.get('k'), StoreError);
      await assert.rejects(s.list(''), StoreError);
      await assert.rejects(s.txn([], [{ type: 'put', key: 'k', value: '' }]), StoreError);
    });
  });
}
