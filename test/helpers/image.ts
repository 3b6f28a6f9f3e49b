/**
 * The product image for tests: `scripts/image/build-image.mjs` (what `npm run image` runs after
 * the build) into the checkout's .image/, made once and reused while its inputs are unchanged
 * (the script's --if-changed: dist/, bin/, build/Release, package-lock.json, the shim's source,
 * the image scripts, the Node.js binary). Test files run two at a time: the build runs under
 * flock(1) on .image/.lock, so a second caller waits and then finds the image made. Its Debian
 * base is cached in IMAGE_BASE_CACHE, shared by the checkouts of this machine: a base is named
 * by the mirror's release, the mmdebstrap command and debian-base.mjs, and
 * image-reproducible.test.ts compares an image on it with one built from scratch.
 * A missing prerequisite (root, mmdebstrap, flock, a built dist/) fails with the reason.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { requireExecutable, requireRoot } from './prereq.js';

/** The repository root (this file is dist/test/helpers/image.js). */
export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
export const IMAGE_SCRIPT = join(REPO_ROOT, 'scripts/image/build-image.mjs');
/** Where ensureImage() caches the Debian base: PODIPAM_IMAGE_BASE_CACHE, or ~/.cache/podipam/image-base. */
export const IMAGE_BASE_CACHE = process.env.PODIPAM_IMAGE_BASE_CACHE || join(homedir(), '.cache', 'podipam', 'image-base');

/** What build-image.mjs writes to <out>/image.json (the fields tests use). */
export interface BuiltImage {
  /** The full reference, as containerd names it after import: docker.io/podipam/podipam:<version>. */
  readonly ref: string;
  /** The manifest's digest (sha256:…). */
  readonly digest: string;
  /** The OCI archive (`ctr -n k8s.io images import <archive>`). */
  readonly archive: string;
  /** The OCI layout directory. */
  readonly layout: string;
  readonly size: { readonly compressed: number; readonly unpacked: number; readonly archive: number };
  readonly layers: readonly { readonly digest: string; readonly size: number; readonly unpacked: number; readonly createdBy: string }[];
  readonly sbom: { readonly dir: string; readonly debianPackages: number; readonly npmPackages: number; readonly node: string };
  readonly sourceDateEpoch: number;
  readonly buildSeconds: number;
  readonly baseCached: boolean;
  /** The Debian release the base was made from (its InRelease file; its Date is the base's mtime clamp). */
  readonly baseRelease: { readonly url: string; readonly sha256: string; readonly date: string };
}

/** Fails with the reason unless this machine can build the image. */
export function requireImageBuild(): void {
  requireRoot('building the image with mmdebstrap');
  requireExecutable('/usr/bin/mmdebstrap');
  requireExecutable('/usr/bin/flock');
  requireExecutable('/usr/bin/tar');
}

/**
 * Runs build-image.mjs with `args` (under flock on `<out>/.lock` when `lock`; `env` added to this
 * process's environment); resolves with its image.json. Rejects with the exit status and the
 * tail of its output when it fails.
 */
export async function buildImage(out: string, args: readonly string[] = [], lock = false, env: Readonly<Record<string, string>> = {}): Promise<BuiltImage> {
  requireImageBuild();
  mkdirSync(out, { recursive: true });
  const argv = [process.execPath, IMAGE_SCRIPT, '--out', out, ...args];
  const [cmd, ...rest] = lock ? ['/usr/bin/flock', join(out, '.lock'), ...argv] : argv;
  const child = spawn(cmd as string, rest, { cwd: REPO_ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (d: Buffer): void => {
    output = (output + d.toString('utf8')).slice(-16_000);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const status = await new Promise<number | string>((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code, signal) => resolve(code ?? signal ?? 'unknown'));
  });
  if (status !== 0) throw new Error(`${argv.slice(1).join(' ')} failed (exit ${status}):\n${output.slice(-6000)}`);
  return JSON.parse(readFileSync(join(out, 'image.json'), 'utf8')) as BuiltImage;
}

/** The image in the checkout's .image/, built when missing or when its inputs changed. */
export function ensureImage(): Promise<BuiltImage> {
  return buildImage(join(REPO_ROOT, '.image'), ['--if-changed', '--base-cache', IMAGE_BASE_CACHE], true);
}
