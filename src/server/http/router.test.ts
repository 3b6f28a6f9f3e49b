import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HttpError } from './http-error.js';
import { Router } from './router.js';

const r = new Router<string>()
  .add('GET', '/api/v1/pools', 'list')
  .add('POST', '/api/v1/pools', 'create')
  .add('GET', '/api/v1/blocks/:cidr', 'block')
  .add('DELETE', '/api/v1/allocations/:handle', 'release');

test('router matches literal paths by method and decodes params after splitting', () => {
  assert.equal(r.match('GET', '/api/v1/pools').handler, 'list');
  assert.equal(r.match('POST', '/api/v1/pools/').handler, 'create');
  const m = r.match('GET', '/api/v1/blocks/10.244.0.64%2F26');
  assert.deepEqual(m.params, { cidr: '10.244.0.64/26' });
  assert.equal(m.pattern, '/api/v1/blocks/:cidr');
  assert.equal(r.match('HEAD', '/api/v1/pools').handler, 'list');
});

test('router answers 405 naming the allowed methods, 404 for unknown paths, 400 for bad escapes', () => {
  assert.throws(
    () => r.match('PUT', '/api/v1/pools'),
    (e: unknown) => e instanceof HttpError && e.status === 405 && /use GET, POST/.test(e.message),
  );
  assert.throws(
    () => r.match('GET', '/api/v1/nope'),
    (e: unknown) => e instanceof HttpError && e.status === 404,
  );
  assert.throws(
    () => r.match('GET', '/api/v1/blocks/%E0%A4%A'),
    (e: unknown) => e instanceof HttpError && e.status === 400,
  );
});
