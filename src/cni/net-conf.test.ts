import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CniError } from './errors.js';
import { configVersion, decodeConfig, toNetConf } from './net-conf.js';
import { goField } from './go-decode.js';

const is = (code: number, msg: string | RegExp) => (e: unknown) => {
  assert.ok(e instanceof CniError, String(e));
  assert.equal(e.code, code);
  if (typeof msg === 'string') assert.equal(e.msg, msg);
  else assert.match(e.msg, msg);
  return true;
};

test("decodeConfig: bad JSON is code 6 with Go's prefix", () => {
  assert.throws(() => decodeConfig(''), is(6, 'error unmarshall network config: unexpected end of JSON input'));
  assert.throws(() => decodeConfig('{'), is(6, /^error unmarshall network config: /));
  assert.throws(() => decodeConfig('[]'), is(6, 'error unmarshall network config: expected a JSON object, got array'));
  assert.throws(() => decodeConfig('{"name":5}'), is(6, /field "name" must be a string, got number 5/));
});

test('decodeConfig: the network name is required and checked', () => {
  assert.throws(() => decodeConfig('{}'), is(7, 'missing network name'));
  assert.throws(() => decodeConfig('{"name":""}'), is(7, 'missing network name'));
  assert.throws(() => decodeConfig('{"name":"../etc"}'), is(7, 'invalid characters found in network name'));
  assert.equal(decodeConfig('{"Name":"n1"}').Name, 'n1'); // Go matches keys case-insensitively
});

test('configVersion: missing or null is "", non-string is code 6', () => {
  assert.equal(configVersion({}), '');
  assert.equal(configVersion({ cniVersion: null }), '');
  assert.equal(configVersion({ cniVersion: '0.4.0' }), '0.4.0');
  assert.throws(() => configVersion({ cniVersion: 5 }), is(6, /^decoding version from network config: /));
});

test('toNetConf requires an ipam object', () => {
  assert.throws(() => toNetConf({ name: 'n' }, '1.0.0'), is(7, "IPAM config missing 'ipam' key"));
  assert.throws(() => toNetConf({ name: 'n', ipam: null }, '1.0.0'), is(7, "IPAM config missing 'ipam' key"));
  assert.throws(() => toNetConf({ name: 'n', ipam: 'x' }, '1.0.0'), is(7, 'ipam: must be an object, got string "x"'));
  const c = toNetConf({ name: 'n', type: 'bridge', ipam: { type: 'podipam' }, args: 3, runtimeConfig: { ips: [] } }, '1.0.0');
  assert.equal(c.type, 'bridge');
  assert.equal(c.args, undefined);
  assert.deepEqual(c.runtimeConfig, { ips: [] });
});

test('goField: case-insensitive, last match wins, null is absent', () => {
  assert.equal(goField({ RangeStart: 'a' }, 'rangeStart'), 'a');
  assert.equal(goField({ subnet: 'a', Subnet: 'b' }, 'subnet'), 'b');
  assert.equal(goField({ subnet: null }, 'subnet'), undefined);
});
