import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { authorize, checkListenTokens, isLoopbackHost, loadTokens, roleOf } from './auth.js';
import { HttpError } from './http-error.js';
import { INSTALL_TOKEN_FILE, loadInstallToken } from './install-token.js';

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
    writeFileSync(f, `# comment\n\nread=${READ}\nadmin = ${ADMIN}\n`, { mode: 0o600 });
    assert.deepEqual(loadTokens(f, {}), { read: READ, admin: ADMIN });
    assert.deepEqual(loadTokens(f, { PODIPAM_ADMIN_TOKEN: 'other-admin-token-0123' }), { read: READ, admin: 'other-admin-token-0123' });
    writeFileSync(f, 'write=xyz\n');
    assert.throws(() => loadTokens(f, {}), /line 1: expected "read=TOKEN" or "admin=TOKEN"/);
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
  assert.throws(
    () => authorize('read', true),
    (e: unknown) => e instanceof HttpError && e.status === 403,
  );
  assert.throws(
    () => authorize('none', false),
    (e: unknown) => e instanceof HttpError && e.status === 401,
  );
});

test('auth: a malformed token-file line never shows its secret', () => {
  const dir = mkdtempSync(join(tmpdir(), 'podipam-auth-'));
  try {
    const f = join(dir, 't');
    for (const line of ['admn=SECRET-admin-0123456789', 'SECRET-admin-0123456789', 'read SECRET-admin-0123456789', 'admin=SECRET-a SECRET-b']) {
      writeFileSync(f, `read=${READ}\n${line}\n`, { mode: 0o600 });
      assert.throws(
        () => loadTokens(f, {}),
        (e: unknown) =>
          e instanceof Error && /line 2: expected "read=TOKEN" or "admin=TOKEN"/.test(e.message) && !e.message.includes('SECRET') && !e.message.includes(READ),
        line,
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('auth: a token file that group or other may read is refused, naming the file and its mode', () => {
  const dir = mkdtempSync(join(tmpdir(), 'podipam-auth-'));
  try {
    const f = join(dir, 't');
    writeFileSync(f, `read=${READ}\nadmin=${ADMIN}\n`);
    for (const mode of [0o666, 0o644, 0o640, 0o604, 0o660]) {
      chmodSync(f, mode);
      assert.throws(
        () => loadTokens(f, {}),
        (e: unknown) =>
          e instanceof Error &&
          e.message.includes(f) &&
          e.message.includes(`mode is 0${mode.toString(8)}`) &&
          /chmod 600/.test(e.message) &&
          !e.message.includes(READ),
        mode.toString(8),
      );
    }
    chmodSync(f, 0o400);
    assert.deepEqual(loadTokens(f, {}), { read: READ, admin: ADMIN });
    assert.throws(() => loadTokens(dir, {}), /cannot read --token-file .*: not a regular file/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('auth: the install token is made once (mode 0600), reused, and refused when others may read it', () => {
  const dir = mkdtempSync(join(tmpdir(), 'podipam-auth-'));
  try {
    const data = join(dir, 'data');
    const t = loadInstallToken(data);
    assert.match(t, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(statSync(join(data, INSTALL_TOKEN_FILE)).mode & 0o777, 0o600);
    assert.equal(loadInstallToken(data), t, 'the second start reuses it');
    chmodSync(join(data, INSTALL_TOKEN_FILE), 0o644);
    assert.throws(() => loadInstallToken(data), /refusing the install token .*serve\.token: its mode is 0644/);
    writeFileSync(join(data, INSTALL_TOKEN_FILE), 'not a token!\n', { mode: 0o600 });
    chmodSync(join(data, INSTALL_TOKEN_FILE), 0o600);
    assert.throws(
      () => loadInstallToken(data),
      (e: unknown) => e instanceof Error && /must hold one token/.test(e.message) && !e.message.includes('not a token'),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('auth: with only the install token, reads need no token and writes need it', () => {
  const install = 'install-token-0123456789';
  const tokens = { install };
  assert.equal(roleOf(undefined, tokens), 'read');
  assert.equal(roleOf(`Bearer ${install}`, tokens), 'admin');
  assert.equal(roleOf('Bearer wrong-token-0123456789', tokens), 'none');
  assert.throws(
    () => authorize(roleOf(undefined, tokens), true, tokens),
    (e: unknown) => e instanceof HttpError && e.status === 401 && /install token/.test(e.message),
  );
  authorize(roleOf(undefined, tokens), false, tokens);
  // Configured tokens win: the install token then grants nothing.
  assert.equal(roleOf(`Bearer ${install}`, { read: READ, admin: ADMIN, install }), 'none');
});
