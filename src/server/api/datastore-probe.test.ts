import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DatastoreProbe } from './datastore-probe.js';

/** A check whose answer the test gives by hand, counting how often it was started. */
function handCheck() {
  let calls = 0;
  let settle: { resolve: () => void; reject: (e: Error) => void } | undefined;
  return {
    check: () => {
      calls++;
      return new Promise<void>((resolve, reject) => (settle = { resolve, reject }));
    },
    get calls() {
      return calls;
    },
    answer: () => settle?.resolve(),
    fail: (message: string) => settle?.reject(new Error(message)),
  };
}

describe('DatastoreProbe', () => {
  it('answers "slow" after waitMs while a check hangs, joining it instead of starting another', async () => {
    const c = handCheck();
    const probe = new DatastoreProbe(c.check, 30);
    // The check is answered only below: that health() returned at all proves it did not wait for it.
    const first = await probe.health();
    assert.equal(first.state, 'slow');
    assert.equal(c.calls, 1);
    const second = await probe.health();
    assert.equal(second.state, 'slow');
    assert.ok(second.state === 'slow' && second.waitingMs >= 50, JSON.stringify(second));
    assert.equal(c.calls, 1);
    c.answer();
    await new Promise((r) => setTimeout(r, 0));
    const third = probe.health();
    c.answer();
    assert.deepEqual(await third, { state: 'ok' });
    assert.equal(c.calls, 2);
  });

  it('reports the last failed check until one passes', async () => {
    const c = handCheck();
    const probe = new DatastoreProbe(c.check, 30);
    const first = probe.health();
    c.fail('engine gone');
    assert.deepEqual(await first, { state: 'failed', error: 'engine gone' });
    // The next check hangs: the last finished one failed, so that is the answer.
    assert.deepEqual(await probe.health(), { state: 'failed', error: 'engine gone' });
    c.answer();
    await new Promise((r) => setTimeout(r, 0));
    const next = probe.health();
    c.answer();
    assert.deepEqual(await next, { state: 'ok' });
  });
});
