/**
 * Small images made here, without a registry: a single layer of files copied from this machine
 * (each executable with the shared libraries `ldd` names, at their own paths), written as an
 * OCI layout archive and imported into containerd's k8s.io namespace under `ref`.
 * `standInEtcdImage` is deploy/'s etcd image name carrying Debian's etcd (no registry is
 * reachable here to pull the upstream one; the flags deploy/ gives it are the same).
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { requireExecutable } from './prereq.js';

function run(cmd: string, args: readonly string[]): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 120_000 });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: exit ${r.status ?? r.signal}: ${r.error?.message ?? ''}${r.stderr}`);
  return r.stdout;
}

/** The shared libraries (and loader) `ldd` lists for `exe`. */
function libsOf(exe: string): string[] {
  // A static executable (the pause image's busybox) needs none: ldd says so and exits 1.
  const r = spawnSync('ldd', [exe], { encoding: 'utf8', timeout: 120_000 });
  if (r.status !== 0 && `${r.stdout}${r.stderr}`.includes('not a dynamic executable')) return [];
  return run('ldd', [exe])
    .split('\n')
    .map((l) => /(\/\S+) \(0x/.exec(l)?.[1])
    .filter((x): x is string => x !== undefined);
}

export interface FilesImage {
  readonly ref: string;
  /** Executable on this machine → path in the image. */
  readonly files: Readonly<Record<string, string>>;
  readonly env?: readonly string[];
  readonly entrypoint?: readonly string[];
}

/** Builds `image` in `workDir` and imports it into the containerd at `socket` (namespace k8s.io). */
export function importFilesImage(workDir: string, socket: string, image: FilesImage): void {
  const root = join(workDir, 'rootfs');
  const layout = join(workDir, 'layout');
  const blobs = join(layout, 'blobs', 'sha256');
  mkdirSync(blobs, { recursive: true });
  const put = (src: string, dest: string): void => {
    mkdirSync(dirname(join(root, dest)), { recursive: true });
    copyFileSync(src, join(root, dest));
  };
  for (const [src, dest] of Object.entries(image.files)) {
    put(src, dest);
    for (const lib of libsOf(src)) put(lib, lib);
  }
  mkdirSync(join(root, 'tmp'), { recursive: true });
  const layerTar = join(workDir, 'layer.tar');
  run('tar', ['--owner=0', '--group=0', '--numeric-owner', '--sort=name', '-C', root, '-cf', layerTar, '.']);
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
        config: { Env: [...(image.env ?? ['PATH=/usr/local/bin:/usr/bin:/bin'])], ...(image.entrypoint ? { Entrypoint: [...image.entrypoint] } : {}) },
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
  const names = { 'org.opencontainers.image.ref.name': image.ref, 'io.containerd.image.name': image.ref };
  writeFileSync(
    join(layout, 'index.json'),
    JSON.stringify({ schemaVersion: 2, manifests: [{ mediaType: 'application/vnd.oci.image.manifest.v1+json', ...manifest, annotations: names }] }),
  );
  const tar = join(workDir, 'image.tar');
  run('tar', ['-C', layout, '-cf', tar, '.']);
  run('/usr/bin/ctr', ['-a', socket, '-n', 'k8s.io', 'images', 'import', tar]);
}

/** deploy/'s etcd image reference, carrying Debian's /usr/bin/etcd at /usr/local/bin/etcd. */
export function standInEtcdImage(ref: string): FilesImage {
  requireExecutable('/usr/bin/etcd');
  return { ref, files: { '/usr/bin/etcd': '/usr/local/bin/etcd' } };
}

/** Imports an image archive (OCI or docker format, as `ctr images import` takes) into k8s.io. */
export function importImageArchive(socket: string, archive: string): void {
  run('/usr/bin/ctr', ['-a', socket, '-n', 'k8s.io', 'images', 'import', archive]);
}

/** Whether containerd at `socket` holds `ref` in k8s.io (the test kubelet never pulls). */
export function hasImage(socket: string, ref: string): boolean {
  return run('/usr/bin/ctr', ['-a', socket, '-n', 'k8s.io', 'images', 'ls', '-q'])
    .split('\n')
    .includes(ref.includes('/') || ref.includes(':') ? normalizeRef(ref) : ref);
}

/** `podipam/podipam:0.1.0` as containerd names it: `docker.io/podipam/podipam:0.1.0`. */
export function normalizeRef(ref: string): string {
  const first = ref.split('/')[0]!;
  const withHost =
    ref.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost')
      ? ref
      : `docker.io/${ref.includes('/') ? ref : `library/${ref}`}`;
  return withHost.includes(':', withHost.lastIndexOf('/')) || withHost.includes('@') ? withHost : `${withHost}:latest`;
}
