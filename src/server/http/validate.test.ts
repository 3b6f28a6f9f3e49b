import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HttpError } from './http-error.js';
import { NAME, NAME_HINT, jsonDepth, optionalInt, optionalStringMap, parseJsonObject, queryInt, requireString } from './validate.js';

function fails(fn: () => unknown, field: string | undefined, message: RegExp): void {
  assert.throws(fn, (e: unknown) => e instanceof HttpError && e.status === 400 && e.field === field && message.test(e.message));
}

test('validate: bodies must be JSON objects', () => {
  assert.deepEqual(parseJsonObject(''), {});
  assert.deepEqual(parseJsonObject('{"a":1}'), { a: 1 });
  fails(() => parseJsonObject('[1]'), undefined, /must be a JSON object: got \[1\]/);
  fails(() => parseJsonObject('{'), undefined, /not valid JSON/);
});

test('validate: messages name the field and the value', () => {
  fails(() => requireString({}, 'name'), 'name', /field "name" is required/);
  fails(() => requireString({ name: 3 }, 'name'), 'name', /must be a string: got 3/);
  fails(() => requireString({ name: 'A b' }, 'name', NAME, NAME_HINT), 'name', /RFC 1123.*got "A b"/);
  fails(() => optionalInt({ blockSize: 26.5 }, 'blockSize', 0, 128), 'blockSize', /between 0 and 128: got 26.5/);
  fails(() => optionalStringMap({ labels: { zone: 'a b' } }, 'labels'), 'labels.zone', /"a b"/);
  fails(() => queryInt(new URLSearchParams('limit=-1'), 'limit', 10, 1, 100), 'limit', /query parameter "limit".*got "-1"/);
  assert.equal(queryInt(new URLSearchParams(''), 'limit', 10, 1, 100), 10);
  assert.deepEqual(optionalStringMap({ labels: { 'topology.kubernetes.io/zone': 'a' } }, 'labels'), { 'topology.kubernetes.io/zone': 'a' });
});

test('validate: nesting is bounded at 64 levels, counted outside strings', () => {
  fails(() => parseJsonObject(`{"a":${'['.repeat(64)}${']'.repeat(64)}}`), undefined, /nests arrays and objects deeper than 64 levels/);
  fails(() => parseJsonObject('['.repeat(100000)), undefined, /deeper than 64 levels/);
  assert.deepEqual(parseJsonObject(`{"a":"${'{'.repeat(200)}\\"{"}`), { a: `${'{'.repeat(200)}"{` });
  assert.equal(jsonDepth(`{"a":${'['.repeat(63)}${']'.repeat(63)}}`, 64), 64);
});
