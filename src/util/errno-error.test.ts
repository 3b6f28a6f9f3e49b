import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, openSync, writeSync, linkSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { constants } from 'node:os';
import { errnoError } from './errno-error.js';

/** What node:fs threw for `fn`. */
function thrown(fn: () => void): NodeJS.ErrnoException {
  try {
    fn();
  } catch (e) {
    return e as NodeJS.ErrnoException;
  }
  assert.fail('node:fs did not throw');
}

test("errnoError builds node:fs's own error: on a path, on two paths, on a descriptor", () => {
  const root = mkdtempSync(join(tmpdir(), 'podipam-errno-'));
  try {
    const missing = join(root, 'missing', 'x');
    const cases: [NodeJS.ErrnoException, NodeJS.ErrnoException][] = [];
    cases.push([thrown(() => openSync(missing, 'r')), errnoError(constants.errno.ENOENT, 'open', missing)]);
    writeFileSync(join(root, 'a'), '');
    writeFileSync(join(root, 'b'), '');
    cases.push([thrown(() => linkSync(join(root, 'a'), join(root, 'b'))), errnoError(constants.errno.EEXIST, 'link', join(root, 'a'), join(root, 'b'))]);
    const fd = openSync(join(root, 'a'), 'r');
    try {
      cases.push([thrown(() => writeSync(fd, 'x')), errnoError(constants.errno.EBADF, 'write')]);
    } finally {
      closeSync(fd);
    }
    for (const [fs, ours] of cases) {
      assert.equal(ours.message, fs.message);
      assert.deepEqual(
        [ours.code, ours.errno, ours.syscall, ours.path, (ours as { dest?: string }).dest],
        [fs.code, fs.errno, fs.syscall, fs.path, (fs as { dest?: string }).dest],
      );
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
