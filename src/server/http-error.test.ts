import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ContentionError, NotFoundError, PoolExhaustedError } from '../cluster/errors.js';
import { NodeExistsError } from '../controller/errors.js';
import { StoreUnavailableError } from '../store/index.js';
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
