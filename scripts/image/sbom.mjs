// The image's software bill of materials, written to a directory (in the image at
// /usr/share/podipam/sbom, and beside the archive):
//   npm.spdx.json        `npm sbom --omit=dev --package-lock-only` (SPDX 2.3), its creation
//                        time set to SOURCE_DATE_EPOCH and its namespace derived from its content
//   debian-packages.txt  dpkg-query -W of the base (package, version, architecture)
//   node.json            the Node.js binary: version, sha256, size, where it came from
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Writes the SBOM files into `dir`; returns the summary `npm run image` prints. */
export function writeSbom({ root, dir, epoch, debianList, node }) {
  mkdirSync(dir, { recursive: true });
  const raw = execFileSync('npm', ['sbom', '--omit=dev', '--package-lock-only', '--sbom-format=spdx'], { cwd: root, encoding: 'utf8', maxBuffer: 64 << 20 });
  const spdx = JSON.parse(raw);
  spdx.creationInfo.created = new Date(epoch * 1000).toISOString();
  spdx.documentNamespace = 'PLACEHOLDER';
  const ns = createHash('sha256').update(JSON.stringify(spdx)).digest('hex').slice(0, 32);
  spdx.documentNamespace = `http://spdx.org/spdxdocs/${spdx.name.replace(/[^A-Za-z0-9.-]/g, '-')}-${ns}`;
  writeFileSync(join(dir, 'npm.spdx.json'), `${JSON.stringify(spdx, null, 2)}\n`);
  copyFileSync(debianList, join(dir, 'debian-packages.txt'));
  writeFileSync(join(dir, 'node.json'), `${JSON.stringify(node, null, 2)}\n`);
  const debian = readFileSync(debianList, 'utf8').trim().split('\n').filter(Boolean);
  return { npmPackages: spdx.packages.length - 1, debianPackages: debian.length, node: `${node.version} sha256:${node.sha256}` };
}

/** Facts about the Node.js binary this build runs on (the one the image gets). */
export function nodeFacts(path) {
  const bytes = readFileSync(path);
  let pkg = null;
  try {
    const owner = execFileSync('dpkg-query', ['-S', path], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).split(':')[0];
    const version = execFileSync('dpkg-query', ['-W', '-f=${Version}', owner], { encoding: 'utf8' });
    pkg = { name: owner, version };
  } catch {
    // not from a Debian package (a tarball, nvm...): the checksum says what it is
  }
  return {
    version: process.version,
    sha256: createHash('sha256').update(bytes).digest('hex'),
    size: bytes.length,
    path: '/usr/local/bin/node',
    source: { path, package: pkg },
    versions: { v8: process.versions.v8, openssl: process.versions.openssl, modules: process.versions.modules },
  };
}
