import { test } from 'node:test';
import assert from 'node:assert/strict';
import { powerText } from './count-text.js';

test('powerText: 2^N and M*2^N from 2^32 up, otherwise undefined (printed in full)', () => {
  assert.equal(powerText(1n << 72n), '2^72');
  assert.equal(powerText(31n << 67n), '31*2^67');
  assert.equal(powerText(1n << 32n), '2^32');
  assert.equal(powerText((1n << 32n) - 1n), undefined);
  assert.equal(powerText(65536n), undefined);
  assert.equal(powerText((1n << 64n) + 1n), undefined);
});
