import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CallTracker } from './call-tracker.js';

test('in flight while a call runs (counted: two calls of one id end separately); the last begin is remembered', () => {
  const clock = { t: 1000 };
  const c = new CallTracker(() => clock.t);
  const end1 = c.begin('a');
  clock.t = 1500;
  const end2 = c.begin('a');
  assert.deepEqual([...c.inFlight()], ['a']);
  assert.equal(c.touchedAt('a'), 1500);
  end1();
  assert.ok(c.isBusy('a'), 'the second call still runs');
  end2();
  assert.deepEqual([...c.inFlight()], []);
  assert.equal(c.touchedAt('a'), 1500, 'the touch outlives the call');
  assert.equal(c.touchedAt('b'), undefined);
});

test('retain keeps the touches of running ids whatever keep says', () => {
  const c = new CallTracker(() => 0);
  c.begin('a')();
  c.begin('b');
  c.retain(() => false);
  assert.equal(c.touchedAt('a'), undefined);
  assert.equal(c.touchedAt('b'), 0);
});

test('maxAgeMs: old touches of idle ids are forgotten at a later begin, running ones and young ones kept', () => {
  const clock = { t: 0 };
  const c = new CallTracker(() => clock.t, 1000);
  c.begin('old')();
  c.begin('running');
  clock.t = 900;
  c.begin('young')();
  clock.t = 1600;
  c.begin('new')();
  assert.equal(c.touchedAt('old'), undefined);
  assert.equal(c.touchedAt('running'), 0);
  assert.equal(c.touchedAt('young'), 900);
  assert.equal(c.size, 3);
});
