import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { storeConformance } from '../../../test/suites/conformance.js';
import { openStore } from '../open-store.js';
import { MemoryStore } from './memory-store.js';

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
});
