/** The heartbeat rule: a beat vouches only for the view revision it names, and only when written after it. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { vouchedView } from './vouched-view.js';

const view = { rev: 100, at: '2026-12-05T07:00:00.000Z' };
const later = '2026-12-05T07:00:30.000Z';

test('a beat naming the current view, written after it, vouches at its own revision and time', () => {
  assert.deepEqual(vouchedView(view, { rev: 140, viewRev: 100, at: later }), { rev: 140, at: later, by: 'beat' });
});

test('otherwise the view stands on its own revision and time', () => {
  const own = { rev: 100, at: view.at, by: 'view' };
  assert.deepEqual(vouchedView(view, undefined), own, 'no beat');
  assert.deepEqual(vouchedView(view, { rev: 140, viewRev: 90, at: later }), own, 'a beat for an older view');
  assert.deepEqual(vouchedView(view, { rev: 140, viewRev: 120, at: later }), own, 'a beat naming another revision');
  assert.deepEqual(vouchedView(view, { rev: 100, viewRev: 100, at: later }), own, 'a beat in the view’s own txn');
  assert.deepEqual(vouchedView(view, { rev: 90, viewRev: 100, at: later }), own, 'a beat older than the view');
});
