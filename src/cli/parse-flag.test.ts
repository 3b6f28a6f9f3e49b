import { test } from 'node:test';
import assert from 'node:assert/strict';
import { boolOption, parseDuration, parseIntFlag, parseListen, parseOptionalIntFlag } from './parse-flag.js';
import { UsageError } from './usage-error.js';

test('parseIntFlag: integers within bounds; errors name the flag, the value and the bounds', () => {
  assert.equal(parseIntFlag('--workers', '8', { min: 1, max: 256 }), 8);
  assert.equal(parseIntFlag('--n', '-3'), -3);
  assert.equal(parseOptionalIntFlag('--block-size', undefined), undefined);
  const bad: [string, Parameters<typeof parseIntFlag>[2], RegExp][] = [
    ['x', {}, /^invalid --f "x": not an integer$/],
    ['1.5', { min: 1, max: 9 }, /^invalid --f "1.5": must be an integer from 1 to 9$/],
    ['0', { min: 1, max: 9 }, /^invalid --f "0": must be from 1 to 9$/],
    ['-1', { min: 0 }, /^invalid --f "-1": must be from 0 to ∞$/],
    ['99999999999999999999', {}, /not an integer/],
  ];
  for (const [text, bounds, re] of bad)
    assert.throws(
      () => parseIntFlag('--f', text, bounds),
      (e: unknown) => e instanceof UsageError && re.test(e.message),
      text,
    );
});

test('parseDuration, parseListen, boolOption', () => {
  assert.deepEqual(
    ['500ms', '30s', '15m', '1h', '2', '90d'].map((t) => parseDuration('--d', t)),
    [500, 30_000, 900_000, 3_600_000, 2000, 90 * 86_400_000],
  );
  assert.throws(() => parseDuration('--gc-interval', '5 min'), /invalid --gc-interval "5 min": expected a duration/);
  assert.deepEqual(parseListen('7420'), { host: '127.0.0.1', port: 7420 });
  assert.deepEqual(parseListen('[::1]:80'), { host: '::1', port: 80 });
  assert.throws(() => parseListen('localhost'), /invalid --listen "localhost": expected HOST:PORT/);
  assert.equal(boolOption('--x', 'false'), false);
  assert.throws(() => boolOption('--x', 'yes'), /invalid --x "yes": use true or false/);
});
