import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isEngineError } from './engine-error.js';

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (e) {
    return e;
  }
  assert.fail('did not throw');
}

test('engine errors: what V8 raises on a bug is recognised; our own TypeError/RangeError is not', () => {
  const deep = (n: number): number => deep(n + 1) + 1;
  const engine = [
    thrown(() => deep(0)),
    thrown(() => (undefined as unknown as { x: number }).x),
    thrown(() => (null as unknown as { x: number }).x),
    thrown(() => (3 as unknown as () => void)()),
    thrown(() => JSON.stringify({ a: 1n })),
    thrown(() => BigInt(1.5)),
    thrown(() => new Array(-1)),
    thrown(() => [...(3 as unknown as number[])]),
  ];
  for (const e of engine) assert.ok(isEngineError(e), String(e));
  for (const e of [
    new TypeError('invalid CIDR "x": bad address'),
    new RangeError('10.0.0.1 is not in 10.1.0.0/16'),
    new Error('Maximum call stack size exceeded'),
    'x',
  ]) {
    assert.ok(!isEngineError(e), String(e));
  }
});
