/**
 * A private containerd for tests, driven over CRI as kubelet drives it (./cri-client.ts):
 * Debian's containerd and runc, its root, state, socket and CNI directories in a temp dir, the
 * sandbox ("pause") image built here from busybox-static as an OCI layout and imported with
 * `ctr` — no registry. Containers here may not lower their OOM score, so the CRI plugin is told
 * to keep sandboxes at containerd's own (`restrict_oom_score_adj`), and it uses the `native`
 * snapshotter (plain copies: no overlay mounts to leak).
 *
 * stop() stops and removes every sandbox (so the runtime runs each pod's CNI DEL), then stops
 * containerd and kills any of its shims that are left, and unmounts what it left in its dirs.
 *
 * As a node (`node` option): containerd runs in the network namespace `netns` (so host-network
 * pods share it, not the machine's), and in a mount namespace of its own where each node path
 * of `mounts` (e.g. /opt/cni/bin) is the test directory it maps to — what runs there (the
 * runtime, its CNI plugins, the pods' hostPath volumes) sees the node's paths, the machine's
 * stay untouched but for the empty mount points made where none existed (removed by stop()).
 * The CNI bin and conf dirs are then the node's /opt/cni/bin and /etc/cni/net.d, and the
 * snapshotter is overlayfs (its mounts are the node's too; big images are not copied per container).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  closeSync,
  readdirSync,
  rmdirSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { type CriClient, criClient } from './cri-client.js';
import { importFilesImage } from './files-image.js';
import { requireExecutable, requireRoot } from './prereq.js';
import { makeTempDir, type TempDir } from './tmp.js';

export const PAUSE_IMAGE = 'podipam.test/pause:1';
const BUSYBOX = '/bin/busybox';

export interface Containerd {
  readonly dir: string;
  /** containerd's gRPC socket (CRI is served there too). */
  readonly socket: string;
  /** Where the runtime looks for CNI plugins and network configs. */
  readonly cniBinDir: string;
  readonly cniConfDir: string;
  /** A directory for pods' logs (RunPodSandbox's log_directory). */
  readonly logDir: string;
  readonly cri: CriClient;
  /** containerd's process id (its namespaces are the node's). */
  readonly pid: number;
  /** Runs `cmd args…` in containerd's mount and network namespaces (the node's), as its CNI plugins run. */
  onNode(cmd: string, args: readonly string[], input?: string): { status: number | null; stdout: string; stderr: string };
  /** containerd's stderr so far. */
  log(): string;
  /**
   * Stops containerd with `signal` (its shims and sandboxes live on, as on a node), runs `whileDown`
   * (the caller's checks while no containerd serves the socket), and starts it again on the same
   * dirs; resolves once CRI answers again.
   */
  restart(whileDown?: () => Promise<void>, signal?: NodeJS.Signals): Promise<void>;
  stop(): Promise<void>;
}

/** Fails with the reason (and the Debian package) when containerd cannot run here. */
export function requireContainerd(): void {
  requireRoot('a containerd for CRI tests');
  for (const [path, pkg] of [
    ['/usr/bin/containerd', 'containerd'],
    ['/usr/bin/ctr', 'containerd'],
    ['/usr/sbin/runc', 'runc'],
    [BUSYBOX, 'busybox-static'],
  ] as const) {
    try {
      requireExecutable(path);
    } catch (e) {
      throw new Error(`${(e as Error).message}; install Debian package ${pkg} (scripts/install-test-deps.sh)`, { cause: e });
    }
  }
  // The image holds busybox alone: a dynamically linked one (Debian's `busybox`) cannot run in it.
  const fd = openSync(BUSYBOX, 'r');
  const head = Buffer.alloc(4096);
  readSync(fd, head, 0, head.length, 0);
  closeSync(fd);
  if (head.includes('/lib64/ld-linux') || head.includes('/lib/ld-linux')) {
    throw new Error(`missing test prerequisite: ${BUSYBOX} is dynamically linked; install Debian package busybox-static (scripts/install-test-deps.sh)`);
  }
}

const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

/**
 * Starts containerd in a fresh temp dir with `cniPlugins` (name → executable) copied into its
 * CNI bin dir, and imports the pause image. The caller writes its conflist into cniConfDir
 * (the runtime picks the first in name order, as kubelet's does).
 */
export interface NodeOptions {
  /** A network namespace (`ip netns` name) the runtime and host-network pods run in. */
  readonly netns: string;
  /** Node path → test path (a directory, or a file for a file mount); must hold /opt/cni/bin and /etc/cni/net.d. */
  readonly mounts: Readonly<Record<string, string>>;
}

export const NODE_CNI_BIN = '/opt/cni/bin';
export const NODE_CNI_CONF = '/etc/cni/net.d';

/** Makes the missing mount points of `paths` on this machine; returns what it made, deepest first. */
function makeMountPoints(mounts: Readonly<Record<string, string>>): string[] {
  const made: string[] = [];
  for (const [nodePath, testPath] of Object.entries(mounts)) {
    const isFile = statSync(testPath).isFile();
    const missing: string[] = [];
    for (let p = isFile ? dirname(nodePath) : nodePath; !existsSync(p); p = dirname(p)) missing.unshift(p);
    for (const p of missing) {
      mkdirSync(p);
      made.unshift(p);
    }
    if (isFile && !existsSync(nodePath)) {
      writeFileSync(nodePath, '');
      made.unshift(nodePath);
    }
  }
  return made;
}

function removeMountPoints(made: readonly string[]): void {
  for (const p of made) {
    try {
      if (statSync(p).isFile()) unlinkSync(p);
      else rmdirSync(p);
    } catch {
      // not empty or gone: leave it
    }
  }
}

export async function startContainerd(cniPlugins: Readonly<Record<string, string>>, node?: NodeOptions): Promise<Containerd> {
  requireContainerd();
  const tmp = makeTempDir('containerd');
  const dir = tmp.path;
  const socket = join(dir, 'containerd.sock');
  const onNode = (p: string): string => {
    const t = node?.mounts[p];
    if (t === undefined) throw new Error(`startContainerd: node mounts must map ${p}`);
    return t;
  };
  const cniBinDir = node ? onNode(NODE_CNI_BIN) : join(dir, 'cni', 'bin');
  const cniConfDir = node ? onNode(NODE_CNI_CONF) : join(dir, 'cni', 'conf');
  const logDir = join(dir, 'logs');
  for (const d of [cniBinDir, cniConfDir, logDir]) mkdirSync(d, { recursive: true });
  const madeMountPoints = node ? makeMountPoints(node.mounts) : [];
  for (const [name, path] of Object.entries(cniPlugins)) copyFileSync(path, join(cniBinDir, name));
  const config = join(dir, 'config.toml');
  writeFileSync(
    config,
    [
      'version = 2',
      `root = "${join(dir, 'root')}"`,
      `state = "${join(dir, 'state')}"`,
      '[grpc]',
      `  address = "${socket}"`,
      '[plugins."io.containerd.grpc.v1.cri"]',
      `  sandbox_image = "${PAUSE_IMAGE}"`,
      '  restrict_oom_score_adj = true',
      '  [plugins."io.containerd.grpc.v1.cri".containerd]',
      // On a node the overlay mounts stay in its mount namespace and go with it: no copy per container.
      `    snapshotter = "${node ? 'overlayfs' : 'native'}"`,
      '  [plugins."io.containerd.grpc.v1.cri".cni]',
      `    bin_dir = "${node ? NODE_CNI_BIN : cniBinDir}"`,
      `    conf_dir = "${node ? NODE_CNI_CONF : cniConfDir}"`,
      '    max_conf_num = 1',
      '',
    ].join('\n'),
  );
  const quote = (x: string): string => `'${x.replace(/'/g, `'\\''`)}'`;
  // A mount namespace of its own (slave of the machine's: its binds stay there). Not `ip netns
  // exec`: it remounts /sys, and runc then finds no cgroup mount.
  const binds = Object.entries(node?.mounts ?? {}).map(([n, t]) => `mount --bind ${quote(t)} ${quote(n)}`);
  const [cmd, args] = node
    ? [
        'nsenter',
        [
          `--net=/run/netns/${node.netns}`,
          '--',
          'unshare',
          '--mount',
          '--propagation',
          'slave',
          '--',
          'sh',
          '-ec',
          [...binds, `exec /usr/bin/containerd --config ${quote(config)}`].join('\n'),
        ],
      ]
    : ['/usr/bin/containerd', ['--config', config]];
  let stderr = '';
  let child!: ChildProcess;
  let exited = false;
  let done!: Promise<void>;
  const launch = (): void => {
    const c = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'], env: { PATH: process.env.PATH } });
    child = c;
    exited = false;
    live.add(c);
    c.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d.length > 0 && stderr.length < 4 << 20 ? d : ''));
    done = new Promise<void>((resolve) => c.on('exit', () => ((exited = true), live.delete(c), resolve())));
  };
  const answered = async (c: CriClient): Promise<void> => {
    for (let i = 0; ; i++) {
      if (exited) throw new Error(`containerd exited before it answered on ${socket}:\n${stderr.slice(-4000)}`);
      try {
        await c.version();
        return;
      } catch (e) {
        if (i > 600)
          throw new Error(`containerd did not answer CRI Version on ${socket} within 60 s: ${(e as Error).message}\n${stderr.slice(-4000)}`, { cause: e });
        await sleep(100);
      }
    }
  };
  launch();
  let cri: CriClient | undefined;
  try {
    cri = criClient(socket);
    await answered(cri);
    importPauseImage(dir, socket);
  } catch (e) {
    cri?.close();
    child.kill('SIGKILL');
    await done;
    cleanUp(tmp, socket);
    removeMountPoints(madeMountPoints);
    throw e;
  }
  const client = cri;
  return {
    dir,
    socket,
    cniBinDir,
    cniConfDir,
    logDir,
    cri: client,
    get pid() {
      return child.pid!;
    },
    onNode: (c, a, input) => {
      const r = spawnSync('nsenter', ['-t', String(child.pid), '-m', '-n', c, ...a], {
        encoding: 'utf8',
        timeout: 60_000,
        ...(input !== undefined ? { input } : {}),
      });
      return { status: r.status, stdout: r.stdout ?? '', stderr: (r.stderr ?? '') + (r.error ? r.error.message : '') };
    },
    log: () => stderr,
    restart: async (whileDown, signal = 'SIGTERM') => {
      if (!exited) child.kill(signal);
      await Promise.race([done, sleep(15_000)]);
      if (!exited) throw new Error(`containerd did not exit within 15 s of ${signal}:\n${stderr.slice(-4000)}`);
      await whileDown?.();
      launch();
      await answered(client);
    },
    stop: async () => {
      try {
        for (const s of await client.listPodSandboxes()) {
          await client.stopPodSandbox(s.id).catch(() => {});
          await client.removePodSandbox(s.id).catch(() => {});
        }
      } catch {
        // containerd is gone already: its shims are killed below
      }
      client.close();
      if (!exited) child.kill('SIGTERM');
      await Promise.race([done, sleep(15_000)]);
      if (!exited) child.kill('SIGKILL');
      await done;
      cleanUp(tmp, socket);
      removeMountPoints(madeMountPoints);
    },
  };
}

/** The pause image (busybox sleeping until signalled, as pause does) built as a files image and imported into k8s.io. */
function importPauseImage(dir: string, socket: string): void {
  importFilesImage(join(dir, 'pause-image'), socket, {
    ref: PAUSE_IMAGE,
    files: { [BUSYBOX]: '/bin/busybox' },
    entrypoint: ['/bin/busybox', 'sleep', '2147483647'],
  });
}

/** Kills shims still serving this containerd, unmounts what is left under its dir, removes the dir. */
function cleanUp(tmp: TempDir, socket: string): void {
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    let cmd: string;
    try {
      cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      continue;
    }
    if (cmd.includes('containerd-shim') && cmd.includes(socket)) {
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch {
        // gone already
      }
    }
  }
  const mounts = readFileSync('/proc/mounts', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[1] ?? '')
    .filter((m) => m.startsWith(`${tmp.path}/`))
    .sort((a, b) => b.length - a.length);
  for (const m of mounts) spawnSync('umount', ['-l', m]);
  try {
    statSync(tmp.path);
    tmp.remove();
  } catch {
    // removed already
  }
}
