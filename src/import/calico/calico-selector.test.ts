import { test } from 'node:test';
import assert from 'node:assert/strict';
import { calicoSelectorToPodipam } from './calico-selector.js';

test('Calico selectors podipam can express are translated exactly', () => {
  assert.deepEqual(calicoSelectorToPodipam(''), { text: 'all()' });
  assert.deepEqual(calicoSelectorToPodipam(' all() '), { text: 'all()' });
  assert.deepEqual(calicoSelectorToPodipam("zone == 'a'"), { text: 'zone=a' });
  assert.deepEqual(calicoSelectorToPodipam('topology.kubernetes.io/zone=="eu-1" && role != \'gpu\''), { text: 'topology.kubernetes.io/zone=eu-1,role!=gpu' });
  assert.deepEqual(calicoSelectorToPodipam("k == 'a&&b'"), {
    problem: 'invalid nodeSelector "k=a&&b": term "k=a&&b" is not key=value or key!=value (or use all())',
  });
});

test("the rest of Calico's selector language is refused with the term", () => {
  for (const s of ['has(zone)', '!has(zone)', "zone in {'a','b'}", "a == 'x' || b == 'y'", "(a == 'x')", 'zone == a', "zone = 'a'"]) {
    const r = calicoSelectorToPodipam(s);
    assert.ok('problem' in r, s);
  }
  const r = calicoSelectorToPodipam("zone == 'a' && has(gpu)");
  assert.ok('problem' in r && r.problem.includes('"has(gpu)"'));
});
