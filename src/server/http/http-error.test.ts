import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ContentionError, NotFoundError, PoolExhaustedError } from '../../cluster/records/errors.js';
import { NodeExistsError } from '../../controller/errors.js';
import { StoreUnavailableError } from '../../store/index.js';
import { HttpError, badField, toHttpError } from './http-error.js';

test('http errors: service errors map to statuses in one table', () => {
  const cases: [unknown, number, string][] = [
    [new PoolExhaustedError(4, 'n1', ['p'], 1, 0), 409, 'pool_exhausted'],
    [new ContentionError('assign', 100, []), 503, 'contention'],
    [new StoreUnavailableError('etcd://x', 'timeout'), 503, 'datastore_unavailable'],
    [new NotFoundError('pool', 'p'), 404, 'not_found'],
    [new NodeExistsError('n1'), 409, 'node_exists'],
    [new RangeError('blockSize 12'), 400, 'invalid'],
    [new Error('boom'), 500, 'internal'],
    ['weird', 500, 'internal'],
  ];
  for (const [e, status, code] of cases) {
    const h = toHttpError(e);
    assert.equal(h.status, status, String(e));
    assert.equal(h.code, code);
  }
});

test('http errors: the JSON body carries code, message and field', () => {
  assert.deepEqual(badField('cidr', 'bad').toJSON(), { error: { code: 'invalid_field', message: 'bad', field: 'cidr' } });
  assert.deepEqual(new HttpError(404, 'not_found', 'x').toJSON(), { error: { code: 'not_found', message: 'x' } });
});

test("http errors: errors the engine raises are our failures (500 with the cause), not the client's", () => {
  const engine: Error[] = [];
  try {
    void (undefined as unknown as { x: number }).x;
  } catch (e) {
    engine.push(e as Error);
  }
  try {
    const f = (): number => f() + 1;
    f();
  } catch (e) {
    engine.push(e as Error);
  }
  try {
    (3 as unknown as () => void)();
  } catch (e) {
    engine.push(e as Error);
  }
  try {
    JSON.stringify({ a: 1n });
  } catch (e) {
    engine.push(e as Error);
  }
  assert.equal(engine.length, 4);
  for (const e of engine) {
    const h = toHttpError(e);
    assert.equal(h.status, 500, e.message);
    assert.equal(h.code, 'internal');
    assert.equal(h.cause, e);
  }
  // Ours stay 400 with our message.
  for (const e of [new TypeError('invalid pool cidr "x": bad address'), new RangeError('10.0.0.1 is not in 10.1.0.0/16')]) {
    const h = toHttpError(e);
    assert.equal(h.status, 400, e.message);
    assert.equal(h.message, e.message);
  }
});
