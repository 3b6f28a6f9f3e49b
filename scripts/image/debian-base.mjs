// The image's base layer: a minimal Debian bookworm made by mmdebstrap (no daemon, no registry),
// reproducible from the mirror's content alone: its SOURCE_DATE_EPOCH (the clamp of every file's
// mtime) is the Date of the suite's InRelease, not the commit's time, so every commit made while
// the mirror serves the same release shares one base (and one cached tarball). Variant "essential" (dpkg,
// coreutils, dash, grep, sed... no apt) plus what podipam truly needs: iptables (the agent's node
// masquerade; Debian's default nft flavour) and libstdc++6 (the Node.js binary; libgcc-s1 and
// libc6 come with the essential set). Docs, man pages, locales and apt caches are left out;
// device nodes too (the runtime makes /dev). The user 65532 (nonroot, home /home/nonroot) is
// added for the serve/controller pod. The host's resolv.conf and hostname, which mmdebstrap
// copies in, are removed (the runtime mounts its own).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, copyFileSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';

export const SUITE = 'bookworm';
export const MIRROR = process.env.PODIPAM_DEBIAN_MIRROR || 'http://deb.debian.org/debian';
export const PACKAGES = ['iptables', 'libstdc++6'];
export const NONROOT = { uid: 65532, name: 'nonroot', home: '/home/nonroot' };

/** Paths dpkg does not unpack (man pages, docs but their copyright files, locales...). */
const EXCLUDES = ['/usr/share/man/*', '/usr/share/doc/*', '/usr/share/info/*', '/usr/share/locale/*', '/usr/share/lintian/*', '/usr/share/bash-completion/*'];

/** The mmdebstrap command line for a base tarball `out`, with the package list copied to `dpkgList`. */
export function mmdebstrapArgs(out, dpkgList) {
  const { uid, name, home } = NONROOT;
  const customize = [
    'rm -f "$1/etc/resolv.conf" "$1/etc/hostname"',
    `echo '${name}:x:${uid}:${uid}:${name}:${home}:/usr/sbin/nologin' >> "$1/etc/passwd"`,
    `echo '${name}:x:${uid}:' >> "$1/etc/group"`,
    `echo '${name}:!*::0:99999:7:::' >> "$1/etc/shadow"`,
    `mkdir -m 0750 "$1${home}" && chown ${uid}:${uid} "$1${home}"`,
    // The package list as dpkg knows it, for the SBOM.
    `dpkg-query --admindir="$1/var/lib/dpkg" -W -f='\${Package}\\t\${Version}\\t\${Architecture}\\n' | LC_ALL=C sort > '${dpkgList}'`,
  ];
  return [
    '--variant=essential',
    `--include=${PACKAGES.join(',')}`,
    '--format=tar',
    '--skip=output/dev',
    '--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr',
    '--dpkgopt=force-unsafe-io',
    ...EXCLUDES.map((p) => `--dpkgopt=path-exclude=${p}`),
    '--dpkgopt=path-include=/usr/share/doc/*/copyright',
    ...customize.map((c) => `--customize-hook=${c}`),
    SUITE,
    out,
    MIRROR,
  ];
}

/**
 * The suite's release as the mirror serves it: its InRelease file's sha256 (what names every
 * package index, hence every package the base gets) and its Date in seconds (the base's
 * SOURCE_DATE_EPOCH). Rejects naming the URL when the mirror does not answer or the file has no Date.
 */
export async function mirrorRelease(mirror = MIRROR, suite = SUITE) {
  const url = `${mirror}/dists/${suite}/InRelease`;
  let text;
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(new Error('no answer in 60 s')), 60_000);
  try {
    const r = await fetch(url, { signal: abort.signal });
    if (!r.ok) throw new Error(`HTTP ${r.status}`);
    text = await r.text();
  } catch (e) {
    throw new Error(`Debian mirror: cannot read ${url} (${e.message}); set PODIPAM_DEBIAN_MIRROR to a reachable mirror`, { cause: e });
  } finally {
    clearTimeout(timer);
  }
  const date = /^Date: (.+)$/m.exec(text)?.[1];
  const ms = date === undefined ? NaN : Date.parse(date);
  if (!Number.isFinite(ms)) throw new Error(`Debian mirror: ${url} has no valid Date field: current value is ${JSON.stringify(date)}`);
  return { url, sha256: createHash('sha256').update(text).digest('hex'), epoch: Math.floor(ms / 1000) };
}

/**
 * Builds the base tarball into `workDir` (base.tar, debian-packages.txt) and returns their paths
 * and the release it was made from. With `cacheDir`, a base made from the same release with the
 * same command (and this file) is reused, whatever the commit; a new release on the mirror makes
 * a new base (and removes the older ones). Pass no cache to rebuild.
 */
export async function buildBase({ workDir, cacheDir }) {
  const tar = join(workDir, 'base.tar');
  const list = join(workDir, 'debian-packages.txt');
  if (!existsSync('/usr/bin/mmdebstrap')) throw new Error('mmdebstrap is missing: install Debian package mmdebstrap (scripts/install-test-deps.sh)');
  const release = await mirrorRelease();
  const epoch = release.epoch;
  const key = createHash('sha256')
    .update(JSON.stringify([mmdebstrapArgs('OUT', 'LIST'), release.sha256]))
    .update(readFileSync(new URL(import.meta.url)))
    .digest('hex')
    .slice(0, 16);
  const cached = cacheDir && join(cacheDir, `base-${key}`);
  if (cached && existsSync(`${cached}.tar`) && existsSync(`${cached}.txt`)) {
    try {
      copyFileSync(`${cached}.tar`, tar);
      copyFileSync(`${cached}.txt`, list);
      return { tar, list, release, cached: true };
    } catch (e) {
      // A cache shared by several checkouts: another build removed it meanwhile; build it here.
      if (e.code !== 'ENOENT') throw e;
    }
  }
  // Its (long) output goes to a log, shown when it fails.
  const log = join(workDir, 'mmdebstrap.log');
  const fd = openSync(log, 'w');
  try {
    execFileSync('mmdebstrap', mmdebstrapArgs(tar, list), {
      stdio: ['ignore', fd, fd],
      env: { ...process.env, SOURCE_DATE_EPOCH: String(epoch), LC_ALL: 'C.UTF-8' },
    });
  } catch (e) {
    throw new Error(`mmdebstrap failed (${e.status ?? e.signal ?? e.message}); the end of ${log}:\n${readFileSync(log, 'utf8').slice(-4000)}`, { cause: e });
  } finally {
    closeSync(fd);
  }
  if (cached) {
    mkdirSync(cacheDir, { recursive: true });
    for (const [from, ext] of [
      [tar, 'tar'],
      [list, 'txt'],
    ]) {
      // A name of its own per writer: builds in other checkouts may share the cache directory.
      const part = `${cached}.${ext}.${process.pid}.part`;
      copyFileSync(from, part);
      renameSync(part, `${cached}.${ext}`);
    }
    // Older bases are of no use any more.
    for (const f of execFileSync('ls', [cacheDir], { encoding: 'utf8' }).split('\n')) {
      if (f.startsWith('base-') && !f.startsWith(`base-${key}`) && !f.endsWith('.part')) rmSync(join(cacheDir, f), { force: true });
    }
  }
  return { tar, list, release, cached: false };
}
