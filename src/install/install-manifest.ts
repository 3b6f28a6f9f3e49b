/**
 * The record of what `podipam install-cni` wrote: `<conf-dir>/.podipam-install.state`, JSON
 * with each file's path and SHA-256, and the directories install created. A file is podipam's
 * only when it is listed here AND its bytes still hash to a recorded value: a file someone else
 * wrote, or edited since, is never overwritten or removed without --force. The name is hidden
 * and ends in neither .conf, .conflist nor .json, so no CNI runtime loads it as a network.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { writeFileAtomic } from './atomic-write.js';

export const MANIFEST_NAME = '.podipam-install.state';
const KIND = 'podipam-install/v1';

export interface ManifestFile {
  readonly path: string;
  /** Hashes the file may have and still be ours: normally one; two while a write is in flight. */
  readonly sha256: readonly string[];
}

export interface InstallManifest {
  readonly kind: typeof KIND;
  readonly files: readonly ManifestFile[];
  /** Directories install created (deepest last); uninstall removes them when empty. */
  readonly createdDirs: readonly string[];
}

export const EMPTY_MANIFEST: InstallManifest = Object.freeze({ kind: KIND, files: [], createdDirs: [] });

export function sha256(data: Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

export function manifestPath(confDir: string): string {
  return join(confDir, MANIFEST_NAME);
}

/** Reads the manifest of `confDir`; EMPTY_MANIFEST when there is none. Throws naming the file when it is not ours. */
export function readManifest(confDir: string): InstallManifest {
  const path = manifestPath(confDir);
  if (!existsSync(path)) return EMPTY_MANIFEST;
  let v: unknown;
  try {
    v = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new Error(`cannot read install state ${path}: ${(e as Error).message}`);
  }
  const m = v as Partial<InstallManifest> | null;
  const okFile = (f: unknown): f is ManifestFile =>
    typeof f === 'object' && f !== null && typeof (f as ManifestFile).path === 'string' && Array.isArray((f as ManifestFile).sha256) && (f as ManifestFile).sha256.every((h) => typeof h === 'string');
  if (m?.kind !== KIND || !Array.isArray(m.files) || !m.files.every(okFile) || !Array.isArray(m.createdDirs) || !m.createdDirs.every((d) => typeof d === 'string')) {
    throw new Error(`cannot read install state ${path}: not a ${KIND} record`);
  }
  return { kind: KIND, files: m.files, createdDirs: m.createdDirs };
}

export function writeManifest(confDir: string, m: InstallManifest): void {
  writeFileAtomic(manifestPath(confDir), Buffer.from(`${JSON.stringify(m, null, 2)}\n`), 0o644);
}

/** The manifest with `path` recorded as having one of `hashes` (replacing any entry for it). */
export function withFile(m: InstallManifest, path: string, hashes: readonly string[]): InstallManifest {
  const files = m.files.filter((f) => f.path !== path);
  return { ...m, files: [...files, { path, sha256: [...new Set(hashes)] }] };
}

export function withoutFile(m: InstallManifest, path: string): InstallManifest {
  return { ...m, files: m.files.filter((f) => f.path !== path) };
}
