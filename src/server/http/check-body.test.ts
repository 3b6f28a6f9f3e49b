import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkBody } from './check-body.js';
import { HttpError } from './http-error.js';

const schema = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: {
    name: { type: 'string', pattern: '^[a-z]+$', description: 'lower-case letters' },
    size: { type: 'integer', minimum: 20, maximum: 32 },
    on: { type: 'boolean' },
    pools: { type: 'array', maxItems: 3, items: { type: 'string', pattern: '^[a-z]+$', description: 'a pool name' } },
    cidrs: { type: 'array', minItems: 1, items: { type: 'string' } },
    labels: { type: 'object', additionalProperties: { type: 'string' } },
  },
};

function fails(body: Record<string, unknown>, field: string, message: RegExp): void {
  assert.throws(
    () => checkBody(schema, body),
    (e: unknown) => e instanceof HttpError && e.status === 400 && e.code === 'invalid_field' && e.field === field && message.test(e.message),
    `${JSON.stringify(body)} → ${field}`,
  );
}

test('checkBody: a body the schema allows passes unchanged', () => {
  const b = { name: 'a', size: 26, on: true, pools: ['x'], labels: { k: 'v' } };
  assert.equal(checkBody(schema, b), b);
});

test('checkBody: each break names the field and the value', () => {
  fails({ name: 'a', blocksize: 1 }, 'blocksize', /^unknown field "blocksize": allowed fields are name, size, on, pools, cidrs, labels$/);
  fails({}, 'name', /^field "name" is required$/);
  fails({ name: '' }, 'name', /^field "name" is required$/);
  fails({ name: 5 }, 'name', /^field "name" must be a string: got 5$/);
  fails({ name: 'A' }, 'name', /^field "name" must be lower-case letters: got "A"$/);
  fails({ name: 'a', size: 33 }, 'size', /^field "size" must be an integer between 20 and 32: got 33$/);
  fails({ name: 'a', size: 26.5 }, 'size', /got 26.5$/);
  fails({ name: 'a', on: 'yes' }, 'on', /^field "on" must be true or false: got "yes"$/);
  fails({ name: 'a', pools: 'x' }, 'pools', /^field "pools" must be an array of strings: got "x"$/);
  fails({ name: 'a', pools: ['x', 'Y'] }, 'pools[1]', /^field "pools\[1\]" must be a pool name: got "Y"$/);
  fails({ name: 'a', pools: ['a', 'b', 'c', 'd'] }, 'pools', /^field "pools" may have at most 3 items: got 4$/);
  fails({ name: 'a', cidrs: [] }, 'cidrs', /^field "cidrs" must have at least 1 item\(s\): got 0$/);
  fails({ name: 'a', labels: [] }, 'labels', /^field "labels" must be an object of strings: got \[\]$/);
});

test('checkBody: a route that takes no fields says so', () => {
  assert.throws(
    () => checkBody({ type: 'object', additionalProperties: false, properties: {} }, { x: 1 }),
    /^HttpError: unknown field "x": this call takes no fields$/,
  );
});
