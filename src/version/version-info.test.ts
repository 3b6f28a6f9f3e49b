import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeTempDir } from '../../test/helpers/tmp.js';
import { versionInfo, versionText } from './version-info.js';

test('versionInfo reads the package version and the build commit, and sees which native parts exist', () => {
  const d = makeTempDir('version');
  try {
    const root = `${d.path}/`;
    writeFileSync(join(root, 'package.json'), '{"version":"9.8.7"}');
    let v = versionInfo(root);
    assert.deepEqual([v.version, v.commit, v.shim, v.flockAddon], ['9.8.7', 'unknown', null, null]);
    assert.ok(v.cniVersions.includes('1.1.0') && v.cniVersions.includes('0.3.1'));
    assert.equal(v.node, process.version);
    mkdirSync(join(root, 'dist/bin'), { recursive: true });
    mkdirSync(join(root, 'build/Release'), { recursive: true });
    writeFileSync(join(root, 'dist/build-info.json'), '{"commit":"0123456789abcdef0123456789abcdef01234567","dirty":true}');
    writeFileSync(join(root, 'dist/bin/podipam-cni'), '');
    writeFileSync(join(root, 'build/Release/flock.node'), '');
    v = versionInfo(root);
    assert.equal(v.commit, '0123456789abcdef0123456789abcdef01234567-dirty');
    assert.equal(v.shim, join(root, 'dist/bin/podipam-cni'));
    assert.equal(v.flockAddon, join(root, 'build/Release/flock.node'));
    assert.match(versionText(v), /^podipam 9\.8\.7\ncommit: 0123.*-dirty\nCNI spec versions: 0\.1\.0, .*1\.1\.0\nNode\.js: v\d+/);
  } finally {
    d.remove();
  }
});
