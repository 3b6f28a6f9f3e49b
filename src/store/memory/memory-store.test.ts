import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { storeConformance, takeEvents } from '../../../test/suites/conformance.js';
import { StoreCompactedError } from '../errors.js';
import { openStore } from '../open-store.js';
import { MEMORY_LOG_EVENTS, MemoryStore } from './memory-store.js';

storeConformance('memory', async () => new MemoryStore(`conformance-${randomUUID()}`), { peer: (s) => openStore(s.url) });

describe('MemoryStore', () => {
  it('memory: opens a fresh store each time', async () => {
    const a = await openStore('memory:');
    const b = await openStore('memory:');
    await a.txn([], [{ type: 'put', key: 'k', value: 'a' }]);
    assert.equal(await b.get('k'), undefined);
  });

  it('memory:NAME shares its data between stores of one process, also after a close', async () => {
    const a = await openStore('memory:shared-test');
    const r = await a.txn([], [{ type: 'put', key: 'k', value: 'a' }]);
    await a.close();
    const b = await openStore('memory:shared-test');
    assert.deepEqual(await b.get('k'), { key: 'k', value: 'a', rev: r.rev });
    assert.equal(b.url, 'memory:shared-test');
    assert.equal(await (await openStore('memory:other-name')).get('k'), undefined);
  });

  it('returned entries cannot be changed by the caller', async () => {
    const s = new MemoryStore();
    await s.txn([], [{ type: 'put', key: 'k', value: 'a' }]);
    const e = await s.get('k');
    assert.throws(() => ((e as { value: string }).value = 'changed'), TypeError);
    assert.equal((await s.get('k'))?.value, 'a');
  });

  it(`keeps the last ${MEMORY_LOG_EVENTS} changes for watches; older starts are StoreCompactedError`, async () => {
    const s = new MemoryStore();
    const live = s.watch('k', 1);
    for (let i = 0; i < MEMORY_LOG_EVENTS + 10; i++) await s.txn([], [{ type: 'put', key: 'k', value: String(i) }]);
    await assert.rejects(takeEvents(s.watch('k', 5), 1), (e: unknown) => e instanceof StoreCompactedError && e.oldest === 11);
    assert.deepEqual((await takeEvents(s.watch('k', 11), 1)).events[0]?.value, '10');
    // a watch that was live all along got everything
    assert.equal((await takeEvents(live, MEMORY_LOG_EVENTS + 10)).events.length, MEMORY_LOG_EVENTS + 10);
  });
});
