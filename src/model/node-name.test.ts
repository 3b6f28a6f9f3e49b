import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import { checkNodeName, defaultNodeName, DNS_SUBDOMAIN } from './node-name.js';
import { checkResourceName } from './names.js';

test('one node-name rule: a lower-case DNS subdomain of at most 253 characters', () => {
  for (const ok of ['a', 'node-a', 'node-a.example.com', '0', `${'a'.repeat(63)}.${'b'.repeat(63)}`, 'a'.repeat(253)]) {
    checkNodeName('node name', ok);
    assert.ok(DNS_SUBDOMAIN.test(ok), ok);
  }
  for (const bad of ['', 'Node_A', 'node_a', 'NODE', '-a', 'a-', 'a..b', 'a.-b', 'a/b', 'a b', 'a'.repeat(254), 7, undefined]) {
    assert.throws(
      () => checkNodeName('node name', bad),
      (e: unknown) => e instanceof TypeError && e.message.startsWith(`invalid node name ${JSON.stringify(bad)}: must be a DNS subdomain`),
      String(bad),
    );
    if (typeof bad === 'string') assert.ok(!DNS_SUBDOMAIN.test(bad), bad);
  }
  // Pool and reservation names follow the same rule.
  assert.throws(() => checkResourceName('pool name', 'a..b'), /invalid pool name "a\.\.b": must be a DNS subdomain/);
});

test('the default node name: $NODENAME, else $NODE_NAME, else the host name in lower case', () => {
  assert.equal(defaultNodeName({ NODENAME: 'node-x' }), 'node-x');
  assert.equal(defaultNodeName({ NODE_NAME: 'node-y' }), 'node-y');
  assert.equal(defaultNodeName({ NODENAME: 'node-x', NODE_NAME: 'node-y' }), 'node-x');
  assert.equal(defaultNodeName({ NODENAME: '', NODE_NAME: '' }), hostname().trim().toLowerCase());
  assert.equal(defaultNodeName({ NODENAME: '' }), hostname().trim().toLowerCase());
  assert.equal(defaultNodeName({}), hostname().trim().toLowerCase());
});
