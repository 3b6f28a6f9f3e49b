/**
 * The record of what `podipam install-cni` wrote: `<conf-dir>/.podipam-install.state`, JSON
 * with each file's path and SHA-256, and the directories install created. A file is podipam's
 * only when it is listed here AND its bytes still hash to a recorded value: a file someone else
 * wrote, or edited since, is never overwritten or removed without --force. The name is hidden
 * and ends in neither .conf, .conflist nor .json, so no CNI runtime loads it as a network.
 * Paths are absolute. The record is trusted only inside the directories of the command that
 * reads it (`confine`): `<bin-dir>/podipam`, `<conf-dir>/<priority>-<network>.conflist`, and the
 * directories on the way to those two.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { basename, dirname, isAbsolute, join, normalize, sep } from 'node:path';
import { writeFileAtomic } from './atomic-write.js';
import { InstallRecordError } from './install-record-error.js';

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
    throw new Error(`cannot read install state ${path}: ${(e as Error).message}`, { cause: e });
  }
  const m = v as Partial<InstallManifest> | null;
  const okFile = (f: unknown): f is ManifestFile =>
    typeof f === 'object' &&
    f !== null &&
    typeof (f as ManifestFile).path === 'string' &&
    Array.isArray((f as ManifestFile).sha256) &&
    (f as ManifestFile).sha256.every((h) => typeof h === 'string');
  if (
    m?.kind !== KIND ||
    !Array.isArray(m.files) ||
    !m.files.every(okFile) ||
    !Array.isArray(m.createdDirs) ||
    !m.createdDirs.every((d) => typeof d === 'string')
  ) {
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

/** The binary's file name in the bin dir. */
export const BINARY_NAME = 'podipam';

const CONFLIST_FILE = /^[0-9]{1,3}-([a-zA-Z0-9][a-zA-Z0-9_.-]*)\.conflist$/;

/** `<confDir>/<priority>-<name>.conflist`. */
export function conflistPath(confDir: string, priority: string, name: string): string {
  return join(confDir, `${priority}-${name}.conflist`);
}

/** The network a recorded conflist belongs to (from its file name), or undefined for the binary. */
export function conflistNetwork(path: string): string | undefined {
  return CONFLIST_FILE.exec(basename(path))?.[1];
}

/**
 * Throws InstallRecordError (nothing done yet) unless every path the record lists is one install
 * writes with these absolute directories: `<binDir>/podipam`, a conflist directly in `confDir`,
 * or a directory that is `binDir`, `confDir` or one of their ancestors.
 */
export function confine(m: InstallManifest, binDir: string, confDir: string): void {
  const normal = (p: string): boolean => isAbsolute(p) && normalize(p) === p && !p.endsWith(sep);
  const fileOk = (p: string): boolean =>
    normal(p) && ((dirname(p) === binDir && basename(p) === BINARY_NAME) || (dirname(p) === confDir && conflistNetwork(p) !== undefined));
  const onTheWay = (d: string, to: string): boolean => to === d || to.startsWith(d === sep ? d : d + sep);
  const dirOk = (d: string): boolean => normal(d) && (onTheWay(d, binDir) || onTheWay(d, confDir));
  const bad = [...m.files.map((f) => f.path).filter((p) => !fileOk(p)), ...m.createdDirs.filter((d) => !dirOk(d))];
  if (bad.length > 0) throw new InstallRecordError(manifestPath(confDir), bad, binDir, confDir);
}
