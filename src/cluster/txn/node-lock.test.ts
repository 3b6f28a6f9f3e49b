import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NodeLock } from './node-lock.js';

describe('NodeLock', () => {
  it('excludes a second holder, gives up after the timeout, and is free again after release', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'podipam-node-lock-'));
    try {
      const path = join(dir, 'n.lock');
      const a = await NodeLock.acquire(path, 100);
      assert.ok(a, 'the first acquire succeeds');
      const t0 = performance.now();
      assert.equal(await NodeLock.acquire(path, 80), undefined);
      const waited = performance.now() - t0;
      assert.ok(waited >= 70 && waited < 20_000, `waited ${waited} ms`); // the upper bound only proves it gives up
      a.release();
      const b = await NodeLock.acquire(path, 100);
      assert.ok(b);
      b.release();
      b.release();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('runs unlocked (undefined) when the lock file cannot be created', async () => {
    assert.equal(await NodeLock.acquire('/nonexistent-dir/x/n.lock', 10), undefined);
  });
});
