import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { followPrefixSuite } from '../../test/suites/follow-prefix-suite.js';
import { DEFAULT_FOLLOW_BACKOFF, followBackoffMs, followPrefix } from './follow-prefix.js';
import { MemoryStore } from './memory/memory-store.js';
import { openStore } from './open-store.js';
import { SQLITE_LOG_REVISIONS } from './sqlite/sqlite-store.js';
import type { Store } from './store.js';

/** Writes one key outside `prefix` `n` times: a revision each, pushing older ones out of the change log. */
async function writePast(store: Store, prefix: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) await store.txn([], [{ type: 'put', key: `${prefix.slice(0, -1)}-filler`, value: String(i) }]);
}

let dir = '';
let files = 0;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'podipam-follow-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

followPrefixSuite('memory', async () => new MemoryStore(), { compact: (s, p) => writePast(s, p, 10_001) });
followPrefixSuite('sqlite', () => openStore(`sqlite:${join(dir, `t${files++}`, 'store.db')}`), {
  compact: (s, p) => writePast(s, p, SQLITE_LOG_REVISIONS + 1),
});

test('followBackoffMs: firstMs, doubling, never above maxMs (no overflow after many failures)', () => {
  const b = { firstMs: 100, maxMs: 1000 };
  assert.deepEqual(
    [1, 2, 3, 4, 5, 1e6].map((n) => followBackoffMs(b, n)),
    [100, 200, 400, 800, 1000, 1000],
  );
  assert.equal(followBackoffMs(DEFAULT_FOLLOW_BACKOFF, 1), 250);
});

test('followPrefix refuses a back-off whose maxMs is below firstMs, naming the field and value', () => {
  const signal = AbortSignal.abort();
  const base = { store: new MemoryStore(), prefix: 'p/', signal, list: async () => 0, onEvents: () => {} };
  assert.throws(
    () => followPrefix({ ...base, backoff: { firstMs: 100, maxMs: 10 } }),
    /'backoff\.maxMs' must be a number ≥ backoff\.firstMs \(100\): current value is 10/,
  );
  assert.throws(() => followPrefix({ ...base, backoff: { firstMs: -1, maxMs: 10 } }), /'backoff\.firstMs' .*current value is -1/);
});
