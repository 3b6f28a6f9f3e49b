/**
 * `podipam install-cni`: puts the CNI binary into the bin dir as `podipam` and the network
 * config into the conf dir, as Calico's and Cilium's init containers do. Every write is atomic
 * (temp file, fsync, rename), so a runtime that executes or reads a file mid-install sees the
 * old one or the new one, never a torn one. Files are podipam's only when the install manifest
 * records them with their hash; anything else in the way is refused before anything is written
 * (ForeignFileError), unless `force`. Running it again with the same inputs changes nothing.
 * The binary is written before the config (no config names a plugin that is not there yet).
 * Installs of different network names share the binary and coexist; re-installing a name with
 * another priority moves that name's config. The directories are made absolute before anything
 * is recorded, and a record listing a path outside them is refused (InstallRecordError).
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fsyncDir, writeFileAtomic } from './atomic-write.js';
import { conflistText, type ConflistOptions } from './cni-conflist.js';
import { fileState } from './file-state.js';
import { ForeignFileError } from './foreign-file-error.js';
import {
  BINARY_NAME,
  confine,
  conflistNetwork,
  conflistPath,
  EMPTY_MANIFEST,
  manifestPath,
  readManifest,
  sha256,
  withFile,
  withoutFile,
  writeManifest,
  type InstallManifest,
} from './install-manifest.js';
import type { InstallStep } from './install-step.js';

export { BINARY_NAME, conflistPath };

export interface InstallOptions {
  readonly binDir: string;
  readonly confDir: string;
  /** The executable to install as `<binDir>/podipam` (normally the native shim). */
  readonly shim: string;
  readonly conflist: ConflistOptions;
  /** File name prefix that orders the config among others (the runtime takes the first). */
  readonly priority: string;
  readonly dryRun: boolean;
  readonly force: boolean;
}

interface Desired {
  readonly path: string;
  readonly data: Buffer;
  readonly mode: number;
}

/** Installs (or, with dryRun, plans); returns the steps. Throws ForeignFileError or InstallRecordError with nothing written. */
export function installCni(given: InstallOptions): InstallStep[] {
  const o = { ...given, binDir: resolve(given.binDir), confDir: resolve(given.confDir) };
  let shim: Buffer;
  try {
    shim = readFileSync(o.shim);
  } catch (e) {
    throw new Error(`cannot read the CNI binary to install, --shim ${o.shim}: ${(e as Error).message}`, { cause: e });
  }
  const desired: Desired[] = [
    { path: join(o.binDir, BINARY_NAME), data: shim, mode: 0o755 },
    { path: conflistPath(o.confDir, o.priority, o.conflist.name), data: Buffer.from(conflistText(o.conflist)), mode: 0o644 },
  ];
  let manifest = loadManifest(o.confDir, o.force);
  confine(manifest, o.binDir, o.confDir);
  const steps: InstallStep[] = [];
  const refused: string[] = [];
  const writes: { d: Desired; action: InstallStep['action']; old?: string; why?: string }[] = [];
  for (const d of desired) {
    const st = fileState(d.path, manifest);
    const hash = sha256(d.data);
    if (st.kind === 'absent') writes.push({ d, action: 'write' });
    else if (st.kind === 'ours' && st.sha256 === hash && st.mode === d.mode)
      steps.push({ action: 'unchanged', path: d.path, detail: `sha256 ${hash.slice(0, 12)}` });
    else if (st.kind === 'ours') writes.push({ d, action: 'replace', old: st.sha256 });
    else if (o.force) writes.push({ d, action: 'take-over', why: st.why });
    else refused.push(`${d.path} (${st.why})`);
  }
  if (refused.length > 0) throw new ForeignFileError(refused);
  // This network's config under another priority; other networks' configs are theirs.
  const stale = manifest.files.filter((f) => !desired.some((d) => d.path === f.path) && conflistNetwork(f.path) === o.conflist.name);
  const missingDirs = [...new Set([o.binDir, o.confDir].flatMap(missingAncestors))];
  for (const dir of missingDirs) steps.push({ action: 'mkdir', path: dir });
  for (const w of writes) steps.push({ action: w.action, path: w.d.path, detail: `${w.why ? `${w.why}; now ` : ''}sha256 ${sha256(w.d.data).slice(0, 12)}` });
  for (const f of stale) {
    const st = fileState(f.path, manifest);
    if (st.kind === 'ours') steps.push({ action: 'remove', path: f.path, detail: 'no longer installed' });
    else if (st.kind === 'foreign') steps.push({ action: 'keep', path: f.path, detail: `written by an earlier install, ${st.why}` });
  }
  steps.push(...shadowWarnings(o, desired[1]!.path));
  if (o.dryRun) return sortSteps(steps);

  for (const dir of missingDirs) mkdirSync(dir, { mode: 0o755 });
  manifest = { ...manifest, createdDirs: [...new Set([...manifest.createdDirs, ...missingDirs])] };
  // Record the new hashes before writing, so a crash between the two leaves files still ours.
  for (const w of writes) manifest = withFile(manifest, w.d.path, [...(w.old ? [w.old] : []), sha256(w.d.data)]);
  if (writes.length > 0 || missingDirs.length > 0 || !existsSync(manifestPath(o.confDir))) writeManifest(o.confDir, manifest);
  for (const w of writes) writeFileAtomic(w.d.path, w.d.data, w.d.mode);
  for (const w of writes) manifest = withFile(manifest, w.d.path, [sha256(w.d.data)]);
  for (const f of stale) {
    if (fileState(f.path, manifest).kind === 'ours') {
      rmSync(f.path);
      fsyncDir(dirname(f.path));
    }
    manifest = withoutFile(manifest, f.path);
  }
  // Normalise entries (drop a hash left from an interrupted write) and persist.
  for (const d of desired) manifest = withFile(manifest, d.path, [sha256(d.data)]);
  if (writes.length > 0 || stale.length > 0 || !sameManifest(manifest, readManifest(o.confDir))) writeManifest(o.confDir, manifest);
  return sortSteps(steps);
}

function loadManifest(confDir: string, force: boolean): InstallManifest {
  try {
    return readManifest(confDir);
  } catch (e) {
    if (force) return EMPTY_MANIFEST;
    throw new ForeignFileError([`${manifestPath(confDir)} (${(e as Error).message})`], { cause: e });
  }
}

function sameManifest(a: InstallManifest, b: InstallManifest): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** `dir` and its ancestors that do not exist, outermost first. */
function missingAncestors(dir: string): string[] {
  const out: string[] = [];
  for (let d = dir; !existsSync(d); d = dirname(d)) {
    out.unshift(d);
    if (dirname(d) === d) break;
  }
  return out;
}

/** Configs that sort before ours: the runtime uses the first one, so ours would be ignored. */
function shadowWarnings(o: InstallOptions, ours: string): InstallStep[] {
  if (!existsSync(o.confDir)) return [];
  const name = ours.slice(o.confDir.length + 1);
  return readdirSync(o.confDir)
    .filter((f) => /\.(conf|conflist|json)$/.test(f) && f < name)
    .sort()
    .map((f) => ({
      action: 'warn' as const,
      path: join(o.confDir, f),
      detail: `sorts before ${name}: a runtime that takes the first config uses it, not podipam's`,
    }));
}

const ORDER: InstallStep['action'][] = ['mkdir', 'write', 'replace', 'take-over', 'unchanged', 'remove', 'keep', 'rmdir', 'warn'];
function sortSteps(steps: InstallStep[]): InstallStep[] {
  return steps
    .map((s, i) => ({ s, i }))
    .sort((a, b) => ORDER.indexOf(a.s.action) - ORDER.indexOf(b.s.action) || a.i - b.i)
    .map((x) => x.s);
}
