import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { authorize, checkListenTokens, isLoopbackHost, loadTokens, roleOf } from './auth.js';
import { HttpError } from './http-error.js';

const READ = 'read-token-0123456789';
const ADMIN = 'admin-token-0123456789';

test('auth: loopback hosts are recognised', () => {
  for (const h of ['127.0.0.1', '127.1.2.3', '::1', '[::1]', 'localhost']) assert.ok(isLoopbackHost(h), h);
  for (const h of ['0.0.0.0', '::', '10.0.0.5', '', 'example.com']) assert.ok(!isLoopbackHost(h), h);
});

test('auth: a non-loopback listen address needs both tokens', () => {
  checkListenTokens('127.0.0.1', {});
  assert.throws(() => checkListenTokens('0.0.0.0', {}), /refusing to listen on 0\.0\.0\.0.*--token-file/);
  assert.throws(() => checkListenTokens('10.0.0.5', { admin: ADMIN }), /without API tokens/);
  checkListenTokens('0.0.0.0', { read: READ, admin: ADMIN });
});

test('auth: token file lines, environment override, and bad files named', () => {
  const dir = mkdtempSync(join(tmpdir(), 'podipam-auth-'));
  try {
    const f = join(dir, 't');
    writeFileSync(f, `# comment\n\nread=${READ}\nadmin = ${ADMIN}\n`);
    assert.deepEqual(loadTokens(f, {}), { read: READ, admin: ADMIN });
    assert.deepEqual(loadTokens(f, { PODIPAM_ADMIN_TOKEN: 'other-admin-token-0123' }), { read: READ, admin: 'other-admin-token-0123' });
    writeFileSync(f, 'write=xyz\n');
    assert.throws(() => loadTokens(f, {}), /line 1: expected "read=TOKEN" or "admin=TOKEN": got "write=xyz"/);
    assert.throws(() => loadTokens(join(dir, 'missing'), {}), /cannot read --token-file/);
    assert.throws(() => loadTokens(undefined, { PODIPAM_READ_TOKEN: 'short' }), /read token must be at least 16 characters: got 5/);
    assert.throws(() => loadTokens(undefined, { PODIPAM_READ_TOKEN: READ, PODIPAM_ADMIN_TOKEN: READ }), /must differ/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('auth: roles from bearer headers; read may read, only admin may write', () => {
  const tokens = { read: READ, admin: ADMIN };
  assert.equal(roleOf(undefined, {}), 'admin', 'no tokens configured: open');
  assert.equal(roleOf(undefined, tokens), 'none');
  assert.equal(roleOf(`Bearer ${READ}`, tokens), 'read');
  assert.equal(roleOf(`bearer ${ADMIN}`, tokens), 'admin');
  assert.equal(roleOf(`Bearer ${READ}x`, tokens), 'none');
  assert.equal(roleOf(`Basic ${READ}`, tokens), 'none');
  authorize('read', false);
  authorize('admin', true);
  assert.throws(() => authorize('read', true), (e: unknown) => e instanceof HttpError && e.status === 403);
  assert.throws(() => authorize('none', false), (e: unknown) => e instanceof HttpError && e.status === 401);
});
