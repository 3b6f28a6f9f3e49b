/**
 * What the e2e tests need from the machine. A missing prerequisite FAILS the test with its
 * name and the Debian package that provides it — a test never skips (CI runs as root with
 * what scripts/install-test-deps.sh installs).
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';

/** Debian packages that provide the programs the tests run (as scripts/install-test-deps.sh installs them). */
const PACKAGE_OF: Readonly<Record<string, string>> = {
  '/usr/lib/cni/host-local': 'containernetworking-plugins',
  '/usr/lib/cni/bridge': 'containernetworking-plugins',
  '/usr/bin/etcd': 'etcd-server',
  '/usr/bin/chromium': 'chromium',
  '/usr/bin/prometheus': 'prometheus',
  '/usr/bin/promtool': 'prometheus',
  '/usr/bin/mmdebstrap': 'mmdebstrap',
  '/usr/bin/skopeo': 'skopeo',
  '/usr/bin/flock': 'util-linux',
  '/usr/bin/tar': 'tar',
};

const checked = new Set<string>();

/** Throws unless `path` is an executable file, naming the package that provides it. */
export function requireExecutable(path: string): void {
  if (checked.has(path)) return;
  try {
    accessSync(path, constants.X_OK);
  } catch (e) {
    const pkg = PACKAGE_OF[path];
    throw new Error(
      `missing test prerequisite: ${path} is not an executable file (${(e as NodeJS.ErrnoException).code})` +
        (pkg ? `; install Debian package ${pkg} (scripts/install-test-deps.sh)` : ''),
      { cause: e },
    );
  }
  checked.add(path);
}

/** Throws unless this process runs as root; `why` says what needs it. */
export function requireRoot(why: string): void {
  const uid = process.getuid?.();
  if (uid !== 0) throw new Error(`missing test prerequisite: ${why} needs root (running as uid ${uid ?? 'unknown'})`);
}

/** Throws unless `cmd args…` runs and exits 0 (e.g. `ip netns list`), with its output. */
export function requireCommand(cmd: string, args: readonly string[], pkg: string): void {
  const key = [cmd, ...args].join(' ');
  if (checked.has(key)) return;
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 10_000 });
  if (r.status !== 0) {
    const why = r.error ? r.error.message : `exit ${r.status ?? r.signal}: ${`${r.stdout ?? ''}${r.stderr ?? ''}`.trim()}`;
    throw new Error(`missing test prerequisite: \`${key}\` failed (${why}); install Debian package ${pkg}`);
  }
  checked.add(key);
}
