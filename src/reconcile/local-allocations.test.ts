import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { localAllocations } from './local-allocations.js';

const evidence = { containerId: 'x', lists: [0, 1] as const, ageMs: 1 };

test('local allocations: one per attachment (its addresses, oldest mtime); a release removes only files the attachment still holds', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'podipam-local-alloc-'));
  try {
    const net = join(dir, 'net1');
    mkdirSync(net);
    writeFileSync(join(net, '10.1.0.2'), 'c1\r\neth0');
    writeFileSync(join(net, 'fd00::2'), 'c1\r\neth0');
    writeFileSync(join(net, '10.1.0.3'), 'c2\r\neth0');
    writeFileSync(join(net, '10.1.0.4'), 'legacy-bare-id'); // pre-2018 format: left alone
    writeFileSync(join(net, 'last_reserved_ip.0'), '10.1.0.4');
    symlinkSync('/etc/passwd', join(net, '10.1.0.5')); // not a regular file: left alone
    mkdirSync(join(dir, 'not a network name'));
    const src = localAllocations(dir);
    const all = await src.list();
    assert.deepEqual(
      all.map((a) => [a.network, a.containerId, a.ifname, a.addresses]),
      [
        ['net1', 'c1', 'eth0', ['10.1.0.2', 'fd00::2']],
        ['net1', 'c2', 'eth0', ['10.1.0.3']],
      ],
    );
    assert.ok(all.every((a) => typeof a.since === 'number' && a.since > Date.now() - 60_000));
    // c2's address is meanwhile released and taken by c3: the release of c2 removes nothing.
    writeFileSync(join(net, '10.1.0.3'), 'c3\r\neth0');
    assert.deepEqual(await src.release(all[1]!, evidence), []);
    assert.deepEqual(await src.release(all[0]!, evidence), ['10.1.0.2', 'fd00::2']);
    assert.deepEqual(
      readdirSync(net)
        .filter((n) => !n.startsWith('.') && n !== 'lock')
        .sort(),
      ['10.1.0.3', '10.1.0.4', '10.1.0.5', 'last_reserved_ip.0'],
    );
    assert.deepEqual(await localAllocations(join(dir, 'absent')).list(), []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
