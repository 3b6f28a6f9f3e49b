import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { formatAddr } from '../ip/index.js';
import { HostLocalDirError, readHostLocalDir } from './read-host-local-dir.js';

function withDir(fn: (root: string) => void) {
  const root = mkdtempSync(join(tmpdir(), 'podipam-hl-'));
  try {
    fn(root);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

test('a dataDir: every network directory, its reservations (legacy ones as eth0), other files skipped with the reason', () => {
  withDir((root) => {
    mkdirSync(join(root, 'net'));
    writeFileSync(join(root, 'net', 'lock'), '');
    writeFileSync(join(root, 'net', 'last_reserved_ip.0'), '10.0.0.3');
    writeFileSync(join(root, 'net', '10.0.0.2'), 'c1\r\neth1');
    writeFileSync(join(root, 'net', '10.0.0.3'), 'c2');
    writeFileSync(join(root, 'net', 'notes'), 'x');
    const { reservations, skipped } = readHostLocalDir(root);
    assert.deepEqual(
      reservations.map((r) => [r.network, formatAddr(r.ip), r.containerId, r.ifname, r.legacy]),
      [
        ['net', '10.0.0.2', 'c1', 'eth1', false],
        ['net', '10.0.0.3', 'c2', 'eth0', true],
      ],
    );
    assert.deepEqual(skipped, [`${join(root, 'net', 'notes')}: not named after an IP address`]);
  });
});

test('refusals name the field at fault: network', () => {
  withDir((root) => {
    mkdirSync(join(root, 'net'));
    assert.throws(
      () => readHostLocalDir(root, 'other'),
      (e: unknown) => e instanceof HostLocalDirError && e.field === 'network' && e.problem.startsWith('other: no directory'),
    );
    writeFileSync(join(root, 'net', '10.0.0.2'), 'c1\r\neth0');
    assert.throws(
      () => readHostLocalDir(join(root, 'net'), 'bad name'),
      (e: unknown) => e instanceof HostLocalDirError && e.field === 'network' && e.problem === '"bad name" is not a valid CNI network name',
    );
    assert.throws(
      () => readHostLocalDir(join(root, 'missing')),
      (e: unknown) => e instanceof HostLocalDirError && e.field === undefined && /^cannot read host-local directory .*: ENOENT$/.test(e.message),
    );
  });
});
