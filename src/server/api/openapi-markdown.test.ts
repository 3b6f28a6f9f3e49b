import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openApiMarkdown } from './openapi-markdown.js';

const DOC = {
  info: { title: 'T', version: 'v1', description: 'D.' },
  paths: {
    '/api/v1/pools': {
      post: {
        tags: ['pools'],
        summary: 'create a pool',
        security: [{ bearer: [] }],
        'x-podipam-token': 'admin',
        requestBody: {
          content: {
            'application/json': {
              schema: {
                type: 'object',
                required: ['name'],
                properties: { name: { type: 'string', description: 'the name' }, blockSize: { type: 'integer', minimum: 0, maximum: 128 } },
              },
            },
          },
        },
        responses: { '201': { description: 'created' }, '409': { description: 'a conflict' } },
      },
    },
    '/healthz': {
      get: {
        tags: ['server'],
        summary: 'liveness',
        security: [],
        parameters: [{ name: 'q', in: 'query', schema: { enum: ['a', 'b'] } }],
        responses: { '200': { description: 'ok', content: { 'text/plain': {} } } },
      },
    },
  },
};

test('openApiMarkdown: a section per tag, each route with its token, parameters, body and answers', () => {
  const page = openApiMarkdown(DOC);
  assert.match(page, /^# HTTP API reference\n/);
  assert.match(page, /\n## pools\n\n### POST \/api\/v1\/pools\n\ncreate a pool\.\n\nToken: admin/);
  assert.match(page, /\| `name` \| string \| yes \| the name \|/);
  assert.match(page, /\| `blockSize` \| integer ≥ 0 ≤ 128 \| {2}\| {2}\|/);
  assert.match(page, /\| 409 \| a conflict \|/);
  assert.match(page, /### GET \/healthz\n\nliveness\.\n\nToken: none\./);
  assert.match(page, /\| `q` \| query \| "a" or "b" \| {2}\| {2}\|/);
  assert.match(page, /\| 200 \| ok \(`text\/plain`\) \|/);
  assert.equal(openApiMarkdown(DOC), page);
});
