/**
 * Shared set-up of the runtime e2e tests: a scratch conf dir / bin dir (podipam linked in, test
 * plugins written as shell scripts) / cache dir / IPAM data dir, network namespaces and links
 * named after the test and the process, everything removed by `cleanup()`. A missing
 * prerequisite (root, ip netns, the reference plugins) throws with the reason: the test fails.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PODIPAM_BIN } from '../helpers/plugin.js';
import { makeTempDir, type TempDir } from '../helpers/tmp.js';
import { CniRuntime, createNetns, deleteNetns, loadNetwork, type NetworkConfigList } from '../../src/runtime/index.js';

export const REF_DIR = '/usr/lib/cni';

export function sh(cmd: string, args: readonly string[]): { ok: boolean; out: string } {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 15_000 });
  return { ok: r.status === 0, out: `${r.stdout ?? ''}${r.stderr ?? ''}` };
}

/** Throws (failing the test) when something the runtime tests need is missing. */
export function requirePrerequisites(plugins: readonly string[] = ['bridge', 'loopback', 'host-local', 'tuning', 'portmap']): void {
  if (process.getuid?.() !== 0) throw new Error('prerequisite missing: these tests create network namespaces and must run as root');
  if (!sh('ip', ['netns', 'list']).ok) throw new Error('prerequisite missing: `ip netns` (iproute2) does not work here');
  const missing = plugins.filter((p) => !existsSync(join(REF_DIR, p)));
  if (missing.length)
    throw new Error(`prerequisite missing: reference plugins ${missing.join(', ')} not in ${REF_DIR} (apt-get install containernetworking-plugins)`);
  if (plugins.includes('portmap') && !sh('iptables-save', ['-t', 'nat']).ok)
    throw new Error('prerequisite missing: portmap needs iptables (apt-get install iptables)');
  if (!existsSync(PODIPAM_BIN)) throw new Error(`prerequisite missing: ${PODIPAM_BIN} (build first)`);
}

export class Scratch {
  readonly tag = `${process.pid.toString(36)}${randomBytes(2).toString('hex')}`.slice(-7);
  readonly root: TempDir;
  readonly confDir: string;
  readonly binDir: string;
  readonly cacheDir: string;
  readonly dataDir: string;
  readonly #netns: string[] = [];
  readonly #links: string[] = [];
  readonly #lists: NetworkConfigList[] = [];

  constructor(prefix: string) {
    this.root = makeTempDir(prefix);
    this.confDir = join(this.root.path, 'net.d');
    this.binDir = join(this.root.path, 'bin');
    this.cacheDir = join(this.root.path, 'cache');
    this.dataDir = join(this.root.path, 'ipam');
    for (const d of [this.confDir, this.binDir]) mkdirSync(d);
    symlinkSync(PODIPAM_BIN, join(this.binDir, 'podipam'));
  }

  /** Bin dirs for a runtime: ours first (podipam, test plugins), then the reference plugins. */
  get binDirs(): string[] {
    return [this.binDir, REF_DIR];
  }

  runtime(timeoutMs = 30_000): CniRuntime {
    return new CniRuntime({ binDirs: this.binDirs, cacheDir: this.cacheDir, timeoutMs });
  }

  /** A unique bridge name (<= 15 bytes), removed at clean-up. */
  bridge(n: number): string {
    const b = `pr${this.tag}${n}`.slice(0, 15);
    this.#links.push(b);
    return b;
  }

  /** A netns unique to this test and process; removed at clean-up. Returns its path. */
  netns(n: number): { name: string; path: string } {
    const name = `podipam-rt-${this.tag}-${n}`;
    this.#netns.push(name);
    return { name, path: createNetns(name) };
  }

  /** Writes `<confDir>/<file>` and returns the list loaded from it. */
  writeList(file: string, list: object): NetworkConfigList {
    writeFileSync(join(this.confDir, file), JSON.stringify(list, null, 2));
    const l = loadNetwork(this.confDir, (list as { name: string }).name);
    this.#lists.push(l);
    return l;
  }

  /**
   * A test plugin: a shell script in our bin dir. It appends "<CNI_COMMAND> <name>" to the
   * scratch's calls log, saves its stdin to stdin.<CNI_COMMAND>.<name>, then runs `body`.
   */
  script(name: string, body: string): void {
    const f = join(this.binDir, name);
    const log = join(this.root.path, 'calls.log');
    writeFileSync(
      f,
      `#!/bin/sh\nin=$(cat)\nprintf '%s\\n' "$in" > ${this.root.path}/stdin.$CNI_COMMAND.${name}\necho "$CNI_COMMAND ${name}" >> ${log}\n${body}\n`,
    );
    chmodSync(f, 0o755);
  }

  /** The calls the test plugins logged, in order. */
  calls(): string[] {
    const log = join(this.root.path, 'calls.log');
    return existsSync(log) ? spawnSync('cat', [log], { encoding: 'utf8' }).stdout.trim().split('\n').filter(Boolean) : [];
  }

  /** Files left under the cache's results dir. */
  cachedFiles(): string[] {
    const d = join(this.cacheDir, 'results');
    return existsSync(d) ? readdirSync(d) : [];
  }

  /** Reservation files left in the IPAM data dir for `network` (lock and last_reserved_ip.* are bookkeeping). */
  reservations(network: string): string[] {
    const d = join(this.dataDir, network);
    return existsSync(d) ? readdirSync(d).filter((f) => f !== 'lock' && !f.startsWith('last_reserved_ip')) : [];
  }

  /** Links in netns `name` other than lo. */
  linksIn(name: string): string[] {
    const r = sh('ip', ['-n', name, '-o', 'link', 'show']);
    return r.out
      .split('\n')
      .map((l) => /^\d+: ([^:@]+)/.exec(l)?.[1])
      .filter((n): n is string => !!n && n !== 'lo');
  }

  /** Host-side ports on bridge `b`. */
  portsOf(b: string): string[] {
    const r = sh('ip', ['-o', 'link', 'show', 'master', b]);
    return r.ok ? r.out.split('\n').filter(Boolean) : [];
  }

  /** DELs whatever a failed test left cached (best effort), then removes netns, links, files. */
  async cleanup(): Promise<void> {
    const rt = this.runtime(10_000);
    for (const l of this.#lists) await rt.gc(l, []).catch(() => {});
    for (const n of this.#netns) deleteNetns(n);
    for (const l of this.#links) sh('ip', ['link', 'del', l]);
    this.root.remove();
  }
}

/** A private IPv4 /24 for a test: 10.<a>.<random>.0/24. */
export function testSubnet(a: number): string {
  return `10.${a}.${16 + (randomBytes(1)[0]! % 200)}.0/24`;
}
