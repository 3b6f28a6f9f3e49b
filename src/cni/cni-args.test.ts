import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CniError } from './errors.js';
import { checkKnownArgs, parseArgBool, parseCniArgs } from './cni-args.js';

const err = (msg: string) => (e: unknown) => e instanceof CniError && e.code === 4 && e.msg === msg;

test('parseCniArgs splits K=V pairs on ; and =', () => {
  assert.deepEqual([...parseCniArgs('')], []);
  assert.deepEqual(
    [...parseCniArgs('IgnoreUnknown=1;K8S_POD_NAME=web;IP=10.0.0.5/24')],
    [
      ['IgnoreUnknown', '1'],
      ['K8S_POD_NAME', 'web'],
      ['IP', '10.0.0.5/24'],
    ],
  );
  assert.deepEqual([...parseCniArgs('IP=')], [['IP', '']]);
});

test('parseCniArgs rejects a pair without exactly one =', () => {
  assert.throws(() => parseCniArgs('IP'), err('ARGS: invalid pair "IP"'));
  assert.throws(() => parseCniArgs('IP=1;'), err('ARGS: invalid pair ""'));
  assert.throws(() => parseCniArgs('a=b=c'), err('ARGS: invalid pair "a=b=c"'));
});

test('checkKnownArgs: unknown keys fail unless IgnoreUnknown is true; keys are case-sensitive', () => {
  assert.throws(() => checkKnownArgs(parseCniArgs('K8S_POD_NAME=foo;IP=1.2.3.4'), ['IP']), err('ARGS: unknown args ["K8S_POD_NAME=foo"]'));
  assert.throws(() => checkKnownArgs(parseCniArgs('ip=1.2.3.4'), ['IP']), err('ARGS: unknown args ["ip=1.2.3.4"]'));
  checkKnownArgs(parseCniArgs('IgnoreUnknown=1;K8S_POD_NAME=foo;IP=1.2.3.4'), ['IP']);
  checkKnownArgs(parseCniArgs('K8S_POD_NAME=foo;IgnoreUnknown=TRUE'), ['IP']);
  assert.throws(() => checkKnownArgs(parseCniArgs('IgnoreUnknown=0;X=1'), ['IP']), err('ARGS: unknown args ["X=1"]'));
  assert.throws(
    () => checkKnownArgs(parseCniArgs('IgnoreUnknown=yes'), []),
    err('ARGS: error parsing value of pair "IgnoreUnknown=yes": boolean unmarshal error: invalid input yes'),
  );
});

test('parseArgBool accepts 1/0/true/false in any case', () => {
  assert.equal(parseArgBool('K', 'True'), true);
  assert.equal(parseArgBool('K', '0'), false);
  assert.equal(parseArgBool('K', 'FALSE'), false);
  assert.throws(() => parseArgBool('K', ''), CniError);
});
