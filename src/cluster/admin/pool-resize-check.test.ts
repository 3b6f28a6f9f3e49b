import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatPrefix, parsePrefix } from '../../ip/index.js';
import { type Pool, validatePoolSpec } from '../records/pool-record.js';
import { checkResize } from './pool-resize-check.js';

const pool = (name: string, cidr: string, blockSize = 26, former: number[] = []): Pool => ({
  ...validatePoolSpec({ name, cidr, blockSize }),
  formerBlockSizes: former,
});

test('checkResize: grow, shrink, unchanged', () => {
  const p = pool('p', '10.0.0.0/20');
  assert.deepEqual([checkResize(p, '10.0.0.0/19').kind, formatPrefix(checkResize(p, '10.0.0.0/19').cidr)], ['grow', '10.0.0.0/19']);
  assert.equal(checkResize(p, '10.0.8.0/21').kind, 'shrink');
  assert.equal(checkResize(p, '10.0.0.0/20').kind, 'same');
});

test('checkResize refuses, naming the field and the value', () => {
  const p = pool('p', '10.0.0.0/20', 26, [24]);
  assert.throws(() => checkResize(p, 'nope'), /invalid pool cidr "nope"/);
  assert.throws(() => checkResize(p, '10.0.0.1/20'), /invalid pool cidr "10\.0\.0\.1\/20"/);
  assert.throws(() => checkResize(p, 'fd00::/64'), /invalid pool cidr "fd00::\/64": pool "p" is IPv4 \(10\.0\.0\.0\/20\); a resize keeps the family/);
  assert.throws(() => checkResize(p, '10.0.16.0/20'), /neither contains nor lies inside the pool's 10\.0\.0\.0\/20/);
  assert.throws(() => checkResize(p, '10.0.0.0/25'), /the pool has \/24 blocks, so its cidr must be \/24 or larger/);
  assert.throws(() => checkResize(p, '169.254.0.0/16'), /link-local/);
});

test('checkResize: while a shrink is unfinished only the same resize may run', () => {
  const p: Pool = { ...pool('p', '10.0.0.0/21'), shrinkingFrom: parsePrefix('10.0.0.0/20') };
  assert.equal(checkResize(p, '10.0.0.0/21').kind, 'same');
  assert.throws(() => checkResize(p, '10.0.0.0/19'), /its shrink to 10\.0\.0\.0\/21 is unfinished; run the resize to 10\.0\.0\.0\/21 again first/);
});
