import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseNodeLabels } from './node-labels.js';
import { validateNodeName } from './node-name.js';

test('node labels follow Kubernetes key and value rules', () => {
  assert.deepEqual(parseNodeLabels(['zone=a', 'kubernetes.io/os=linux', 'empty=', 'x.y_z-1=V.1']), {
    zone: 'a',
    'kubernetes.io/os': 'linux',
    empty: '',
    'x.y_z-1': 'V.1',
  });
  for (const [arg, msg] of [
    ['novalue', /invalid --label "novalue": expected KEY=VALUE/],
    ['=v', /key "" must be/],
    ['-a=v', /key "-a" must be/],
    ['Bad.Prefix/a=v', /key "Bad.Prefix\/a" must be/],
    [`${'k'.repeat(64)}=v`, /key "k{64}" must be/],
    ['a=b c', /value "b c" must be/],
    [`a=${'v'.repeat(64)}`, /value "v{64}" must be/],
  ] as const)
    assert.throws(
      () => parseNodeLabels([arg]),
      (e: unknown) => e instanceof TypeError && msg.test(e.message),
      arg,
    );
  assert.throws(() => parseNodeLabels(['a=1', 'a=2']), /invalid --label "a=2": key "a" given twice/);
});

test('node names are DNS subdomains', () => {
  assert.equal(validateNodeName('node-a.example.com'), 'node-a.example.com');
  for (const bad of ['', 'Node', 'node_a', '-a', 'a-', 'a..b', 'a/b', 'x'.repeat(254)]) {
    assert.throws(
      () => validateNodeName(bad),
      (e: unknown) => e instanceof TypeError && e.message.startsWith(`invalid node name ${JSON.stringify(bad)}`),
      bad,
    );
  }
});
