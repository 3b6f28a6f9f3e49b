import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { UnsafeFileError } from './errors.js';
import { readRegular, writeRegular } from './regular-file.js';

function withDir(fn: (dir: string) => void) {
  const dir = mkdtempSync(join(tmpdir(), 'podipam-regular-'));
  try {
    fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The refusal: an I/O failure (CNI code 5, src/cni/cni-error-of.ts) whose message names `file` and says what it is. */
function refused(fn: () => unknown, file: string, kind: RegExp) {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof UnsafeFileError, String(e));
    assert.equal(e.failure, 'io');
    assert.equal(e.file, file);
    assert.ok(e.message.includes(file), e.message);
    assert.match(e.message, kind);
    return true;
  });
}

test('readRegular reads regular files and refuses links, FIFOs and directories without blocking', () =>
  withDir((dir) => {
    writeFileSync(join(dir, 'f'), 'x\r\ny');
    assert.equal(readRegular(join(dir, 'f')), 'x\r\ny');
    symlinkSync(join(dir, 'f'), join(dir, 'link'));
    refused(() => readRegular(join(dir, 'link')), join(dir, 'link'), /a symbolic link/);
    symlinkSync('/dev/zero', join(dir, 'zero'));
    refused(() => readRegular(join(dir, 'zero')), join(dir, 'zero'), /a symbolic link/);
    assert.equal(spawnSync('mkfifo', [join(dir, 'fifo')]).status, 0);
    refused(() => readRegular(join(dir, 'fifo')), join(dir, 'fifo'), /a FIFO/);
    mkdirSync(join(dir, 'd'));
    refused(() => readRegular(join(dir, 'd')), join(dir, 'd'), /a directory/);
    assert.throws(() => readRegular(join(dir, 'missing')), { code: 'ENOENT' });
  }));

test('writeRegular replaces content (mode on creation) and never writes through a link or into a FIFO', () =>
  withDir((dir) => {
    writeRegular(join(dir, 'last'), '10.0.0.9', 0o644);
    writeRegular(join(dir, 'last'), '10.0.0.1', 0o600);
    assert.equal(readFileSync(join(dir, 'last'), 'utf8'), '10.0.0.1');
    assert.equal(statSync(join(dir, 'last')).mode & 0o777, 0o644 & ~process.umask());
    // Longer, then shorter (cut to length), then longer again; text of more bytes than characters.
    writeRegular(join(dir, 'last'), '192.0.2.101', 0o644);
    writeRegular(join(dir, 'last'), '192.0.2.96', 0o644);
    assert.equal(readFileSync(join(dir, 'last'), 'utf8'), '192.0.2.96');
    writeRegular(join(dir, 'last'), 'fd00::ä€', 0o644);
    assert.equal(readFileSync(join(dir, 'last'), 'utf8'), 'fd00::ä€');
    assert.equal(statSync(join(dir, 'last')).size, Buffer.byteLength('fd00::ä€'));
    writeRegular(join(dir, 'last'), '10.0.0.1', 0o644);
    assert.equal(readFileSync(join(dir, 'last'), 'utf8'), '10.0.0.1');
    writeFileSync(join(dir, 'victim'), 'precious');
    symlinkSync(join(dir, 'victim'), join(dir, 'link'));
    refused(() => writeRegular(join(dir, 'link'), '10.0.0.2', 0o644), join(dir, 'link'), /a symbolic link/);
    assert.equal(readFileSync(join(dir, 'victim'), 'utf8'), 'precious');
    assert.equal(spawnSync('mkfifo', [join(dir, 'fifo')]).status, 0);
    refused(() => writeRegular(join(dir, 'fifo'), '10.0.0.2', 0o644), join(dir, 'fifo'), /FIFO/);
  }));
