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
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, openSync, readFileSync, readSync, closeSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { type CriClient, criClient } from './cri-client.js';
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
  /** containerd's stderr so far. */
  log(): string;
  stop(): Promise<void>;
}

/** Fails with the reason (and the Debian package) when containerd cannot run here. */
export function requireContainerd(): void {
  requireRoot('a containerd for CRI tests');
  for (const [path, pkg] of [['/usr/bin/containerd', 'containerd'], ['/usr/bin/ctr', 'containerd'], ['/usr/sbin/runc', 'runc'], [BUSYBOX, 'busybox-static']] as const) {
    try {
      requireExecutable(path);
    } catch (e) {
      throw new Error(`${(e as Error).message}; install Debian package ${pkg} (scripts/install-test-deps.sh)`);
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
export async function startContainerd(cniPlugins: Readonly<Record<string, string>>): Promise<Containerd> {
  requireContainerd();
  const tmp = makeTempDir('containerd');
  const dir = tmp.path;
  const socket = join(dir, 'containerd.sock');
  const cniBinDir = join(dir, 'cni', 'bin');
  const cniConfDir = join(dir, 'cni', 'conf');
  const logDir = join(dir, 'logs');
  for (const d of [cniBinDir, cniConfDir, logDir]) mkdirSync(d, { recursive: true });
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
      '    snapshotter = "native"',
      '  [plugins."io.containerd.grpc.v1.cri".cni]',
      `    bin_dir = "${cniBinDir}"`,
      `    conf_dir = "${cniConfDir}"`,
      '    max_conf_num = 1',
      '',
    ].join('\n'),
  );
  const child = spawn('/usr/bin/containerd', ['--config', config], { stdio: ['ignore', 'ignore', 'pipe'], env: { PATH: process.env.PATH } });
  live.add(child);
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d.length > 0 && stderr.length < 4 << 20 ? d : ''));
  let exited = false;
  const done = new Promise<void>((resolve) => child.on('exit', () => ((exited = true), live.delete(child), resolve())));
  let cri: CriClient | undefined;
  try {
    cri = criClient(socket);
    for (let i = 0; ; i++) {
      if (exited) throw new Error(`containerd exited before it answered on ${socket}:\n${stderr.slice(-4000)}`);
      try {
        await cri.version();
        break;
      } catch (e) {
        if (i > 600) throw new Error(`containerd did not answer CRI Version on ${socket} within 60 s: ${(e as Error).message}\n${stderr.slice(-4000)}`);
        await sleep(100);
      }
    }
    importPauseImage(dir, socket);
  } catch (e) {
    cri?.close();
    child.kill('SIGKILL');
    await done;
    cleanUp(tmp, socket);
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
    log: () => stderr,
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
    },
  };
}

/** Builds the pause image (busybox sleeping) as an OCI layout tar and imports it into the k8s.io namespace. */
function importPauseImage(dir: string, socket: string): void {
  const layout = join(dir, 'pause-image');
  const blobs = join(layout, 'blobs', 'sha256');
  const layerRoot = join(dir, 'pause-layer');
  mkdirSync(join(layerRoot, 'bin'), { recursive: true });
  mkdirSync(blobs, { recursive: true });
  copyFileSync(BUSYBOX, join(layerRoot, 'bin', 'busybox'));
  const layerTar = join(dir, 'pause-layer.tar');
  run('tar', ['--owner=0', '--group=0', '--numeric-owner', '-C', layerRoot, '-cf', layerTar, 'bin']);
  const blob = (bytes: Buffer): { digest: string; size: number } => {
    const hex = createHash('sha256').update(bytes).digest('hex');
    writeFileSync(join(blobs, hex), bytes);
    return { digest: `sha256:${hex}`, size: bytes.length };
  };
  const layer = blob(readFileSync(layerTar));
  const cfg = blob(
    Buffer.from(
      JSON.stringify({
        architecture: process.arch === 'arm64' ? 'arm64' : 'amd64',
        os: 'linux',
        // Sleeps until signalled, as pause does: SIGTERM from the runtime ends it.
        config: { Entrypoint: ['/bin/busybox', 'sleep', '2147483647'] },
        rootfs: { type: 'layers', diff_ids: [layer.digest] },
      }),
    ),
  );
  const manifest = blob(
    Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: 'application/vnd.oci.image.manifest.v1+json',
        config: { mediaType: 'application/vnd.oci.image.config.v1+json', ...cfg },
        layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar', ...layer }],
      }),
    ),
  );
  writeFileSync(join(layout, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
  writeFileSync(
    join(layout, 'index.json'),
    JSON.stringify({
      schemaVersion: 2,
      manifests: [{ mediaType: 'application/vnd.oci.image.manifest.v1+json', ...manifest, annotations: { 'org.opencontainers.image.ref.name': PAUSE_IMAGE, 'io.containerd.image.name': PAUSE_IMAGE } }],
    }),
  );
  const tar = join(dir, 'pause-image.tar');
  run('tar', ['-C', layout, '-cf', tar, '.']);
  run('/usr/bin/ctr', ['-a', socket, '-n', 'k8s.io', 'images', 'import', tar]);
}

function run(cmd: string, args: readonly string[]): void {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 120_000 });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: exit ${r.status ?? r.signal}: ${r.error?.message ?? ''}${r.stderr}`);
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
