import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAddr } from '../ip/index.js';
import { DiskStore, addrOfName, fileContent, listNames, matchesAttachment, matchesLegacy } from './disk-store.js';

function withDir(fn: (dir: string) => void) {
  const root = mkdtempSync(join(tmpdir(), 'podipam-disk-'));
  try {
    fn(join(root, 'data', 'net'));
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

test('open creates the directory (0755) and the lock file (0750), like host-local', () => {
  withDir((dir) => {
    const s = DiskStore.open(dir);
    s.lock();
    s.unlock();
    s.close();
    assert.equal(statSync(dir).mode & 0o777, 0o755 & ~process.umask());
    assert.equal(statSync(join(dir, 'lock')).mode & 0o777, 0o750 & ~process.umask());
    assert.equal(statSync(join(dir, 'lock')).size, 0);
  });
});

test('reserve writes id\\r\\nifname (no newline, 0644) and last_reserved_ip.N; a second reserve is refused', () => {
  withDir((dir) => {
    const s = DiskStore.open(dir);
    s.lock();
    assert.equal(s.reserve('c1', 'eth0', parseAddr('FD00:10:245:1:0:0:0:00AB'), 1), true);
    assert.equal(s.reserve('c2', 'eth0', parseAddr('fd00:10:245:1::ab'), 1), false);
    s.close();
    assert.deepEqual(readFileSync(join(dir, 'fd00:10:245:1::ab')), Buffer.from('c1\r\neth0'));
    assert.equal(readFileSync(join(dir, 'last_reserved_ip.1'), 'utf8'), 'fd00:10:245:1::ab');
    assert.equal(statSync(join(dir, 'fd00:10:245:1::ab')).mode & 0o777, 0o644 & ~process.umask());
    assert.deepEqual(readdirSync(dir).sort(), ['fd00:10:245:1::ab', 'last_reserved_ip.1', 'lock']);
  });
});

test("scan lists files sorted with contents, skips lock and removes a killed writer's temp file", () => {
  withDir((dir) => {
    const s = DiskStore.open(dir);
    writeFileSync(join(dir, '10.0.0.3'), 'c3\r\neth0');
    writeFileSync(join(dir, '10.0.0.10'), 'old');
    writeFileSync(join(dir, '.podipam-reserve.tmp'), '');
    s.lock();
    assert.deepEqual(s.scan(), [
      { name: '10.0.0.10', content: 'old' },
      { name: '10.0.0.3', content: 'c3\r\neth0' },
    ]);
    assert.ok(!readdirSync(dir).includes('.podipam-reserve.tmp'));
    assert.equal(s.remove('10.0.0.3'), true);
    assert.equal(s.remove('10.0.0.3'), false);
    s.close();
  });
});

test('lastReserved ignores junk, a trailing newline and a missing file', () => {
  withDir((dir) => {
    const s = DiskStore.open(dir);
    assert.equal(s.lastReserved(0), undefined);
    writeFileSync(join(dir, 'last_reserved_ip.0'), '10.0.0.5\n');
    assert.equal(s.lastReserved(0), undefined);
    writeFileSync(join(dir, 'last_reserved_ip.0'), 'garbage\u0000');
    assert.equal(s.lastReserved(0), undefined);
    writeFileSync(join(dir, 'last_reserved_ip.0'), '10.0.0.5');
    assert.deepEqual(s.lastReserved(0), parseAddr('10.0.0.5'));
    s.close();
  });
});

test('matching follows host-local: trimmed content, legacy bare id, \\n separator never matches', () => {
  assert.equal(fileContent(' c1 ', 'eth0'), 'c1\r\neth0');
  assert.ok(matchesAttachment('c1\r\neth0\n', 'c1', 'eth0'));
  assert.ok(!matchesAttachment('c1\neth0', 'c1', 'eth0'));
  assert.ok(!matchesAttachment(undefined, 'c1', 'eth0'));
  assert.ok(matchesLegacy('oldctr', 'oldctr'));
  assert.ok(!matchesLegacy('oldctr\r\neth0', 'oldctr'));
  assert.deepEqual(addrOfName('fd00::1'), parseAddr('fd00::1'));
  assert.equal(addrOfName('last_reserved_ip.0'), undefined);
  assert.deepEqual(listNames('/nonexistent/podipam'), []);
});
