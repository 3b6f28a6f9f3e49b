import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CURRENT_VERSION, SUPPORTED_VERSIONS, isSupportedVersion, parseVersion, versionAtLeast } from './version.js';

test('supported versions run from 0.1.0 to 1.1.0, matched exactly', () => {
  assert.deepEqual([...SUPPORTED_VERSIONS], ['0.1.0', '0.2.0', '0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0']);
  assert.equal(CURRENT_VERSION, '1.1.0');
  assert.ok(isSupportedVersion('0.3.1'));
  assert.ok(!isSupportedVersion('0.3'));
  assert.ok(!isSupportedVersion('1.1.0 '));
  assert.ok(!isSupportedVersion(''));
});

test('parseVersion follows Go: empty is 0.1.0, missing parts are 0, junk throws', () => {
  assert.deepEqual(parseVersion(''), [0, 1, 0]);
  assert.deepEqual(parseVersion('1'), [1, 0, 0]);
  assert.deepEqual(parseVersion('0.4'), [0, 4, 0]);
  assert.throws(() => parseVersion('1.2.3.4'), /too many parts/);
  assert.throws(() => parseVersion('abc'), /major version part "abc"/);
  assert.throws(() => parseVersion('1.x'), /minor version part "x"/);
});

test('versionAtLeast compares numerically', () => {
  assert.ok(versionAtLeast('0.4.0', '0.4.0'));
  assert.ok(versionAtLeast('1.0.0', '0.4.0'));
  assert.ok(!versionAtLeast('0.3.1', '0.4.0'));
  assert.ok(versionAtLeast('0.10.0', '0.4.0'));
  assert.ok(!versionAtLeast('', '0.3.0'));
  assert.ok(!versionAtLeast('1.0.0', '1.1.0'));
});

test('parseVersion answers a version parsed before from its cache (the same frozen parts), never an invalid one', () => {
  const a = parseVersion('0.3.1');
  assert.equal(parseVersion('0.3.1'), a);
  assert.ok(Object.isFrozen(a));
  for (let i = 0; i < 2; i++) assert.throws(() => parseVersion('1.x'), /invalid syntax/);
  // Past the cache's bound, versions are still parsed (not kept).
  for (let i = 0; i < 100; i++) assert.deepEqual(parseVersion(`7.${i}.1`), [7, i, 1]);
  assert.equal(versionAtLeast('7.99.1', '7.98.9'), true);
});
