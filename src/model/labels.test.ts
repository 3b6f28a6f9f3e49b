import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isLabelKey, isLabelValue } from './labels.js';
import { parseNodeLabels } from './node-labels.js';
import { parseNodeSelector } from './node-selector.js';
import { optionalStringMap } from '../server/http/validate.js';

const GOOD_KEYS = ['zone', 'Zone_1', 'topology.kubernetes.io/zone', 'a.b/c-d.e_f', 'x'.repeat(63)];
// Upper case or ".." in the prefix, an empty name, a name over 63: one rule refuses them everywhere.
const BAD_KEYS = ['', 'Example.com/zone', 'a..b/zone', 'a/', '/zone', '-zone', 'zone-', 'x'.repeat(64), 'a/b/c'];

test('one label rule for the CLI, the API and node selectors', () => {
  for (const k of GOOD_KEYS) {
    assert.ok(isLabelKey(k), k);
    assert.deepEqual(parseNodeLabels([`${k}=v`]), { [k]: 'v' });
    assert.equal(parseNodeSelector(`${k}=v`).terms[0]!.key, k);
    assert.deepEqual(optionalStringMap({ labels: { [k]: 'v' } }, 'labels'), { [k]: 'v' });
  }
  for (const k of BAD_KEYS) {
    assert.ok(!isLabelKey(k), k);
    assert.throws(() => parseNodeLabels([`${k}=v`]), TypeError, k);
    assert.throws(() => parseNodeSelector(`${k}=v`), TypeError, k);
    assert.throws(() => optionalStringMap({ labels: { [k]: 'v' } }, 'labels'), k);
  }
  for (const v of ['', 'a', 'A_b.c-9', 'x'.repeat(63)]) assert.ok(isLabelValue(v), v);
  for (const v of ['-a', 'a-', 'a b', 'a/b', 'x'.repeat(64)]) {
    assert.ok(!isLabelValue(v), v);
    assert.throws(() => parseNodeSelector(`zone=${v}`), TypeError, v);
  }
});
