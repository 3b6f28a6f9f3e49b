/**
 * `podipam uninstall-cni`: removes exactly what install-cni recorded in its manifest — each
 * file only while its bytes still hash to what install wrote (an edited or replaced file is
 * kept and reported, unless `force`), then the manifest, then the directories install created
 * if they are empty. The configs go before the binary, so no runtime reads a config whose
 * plugin is gone. Nothing recorded: nothing to do.
 *
 * With `name`, only that network's config goes; the binary, the record and the directories stay
 * while another network's config is installed. The record is trusted only inside `binDir` and
 * `confDir` (the same directories as install's, checked against the record): an entry outside
 * them is refused with InstallRecordError and nothing is removed.
 */
import { existsSync, readdirSync, rmdirSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fsyncDir } from './atomic-write.js';
import { fileState } from './file-state.js';
import { confine, conflistNetwork, manifestPath, readManifest, writeManifest, type ManifestFile } from './install-manifest.js';
import type { InstallStep } from './install-step.js';

export interface UninstallOptions {
  readonly binDir: string;
  readonly confDir: string;
  /** Remove only this network's config (and the rest when no other network's config is left). */
  readonly name?: string;
  readonly dryRun: boolean;
  readonly force: boolean;
}

export function uninstallCni(given: UninstallOptions): InstallStep[] {
  const o = { ...given, binDir: resolve(given.binDir), confDir: resolve(given.confDir) };
  const manifest = readManifest(o.confDir);
  confine(manifest, o.binDir, o.confDir);
  const conflists = manifest.files.filter((f) => conflistNetwork(f.path) !== undefined);
  const others = o.name === undefined ? [] : conflists.filter((f) => conflistNetwork(f.path) !== o.name && fileState(f.path, manifest).kind !== 'absent');
  const everything = others.length === 0;
  // Configs first, then the binary.
  const targets: ManifestFile[] = everything
    ? [...conflists, ...manifest.files.filter((f) => conflistNetwork(f.path) === undefined)]
    : conflists.filter((f) => conflistNetwork(f.path) === o.name);
  const steps: InstallStep[] = [];
  const removed = new Set<string>();
  for (const f of targets) {
    const st = fileState(f.path, manifest);
    if (st.kind === 'absent') continue;
    if (st.kind === 'foreign' && !o.force) {
      steps.push({ action: 'keep', path: f.path, detail: `${st.why}; --force removes it` });
      continue;
    }
    steps.push({ action: 'remove', path: f.path });
    removed.add(f.path);
    if (!o.dryRun) {
      rmSync(f.path);
      fsyncDir(dirname(f.path));
    }
  }
  const state = manifestPath(o.confDir);
  const kept = manifest.files.filter((f) => existsSync(f.path) && !removed.has(f.path));
  if (kept.length > 0) {
    // Keep the record of what is left: the other networks' configs and the binary, or what
    // `uninstall-cni --force` can still remove later.
    if (!o.dryRun) writeManifest(o.confDir, { ...manifest, files: kept });
  } else if (existsSync(state)) {
    steps.push({ action: 'remove', path: state });
    removed.add(state);
    if (!o.dryRun) rmSync(state);
  }
  if (!everything) return steps;
  for (const dir of [...manifest.createdDirs].reverse()) {
    if (!existsSync(dir)) continue;
    // With --dry-run nothing was removed: count what would be.
    const left = readdirSync(dir).filter((n) => !removed.has(join(dir, n)));
    if (left.length > 0) {
      steps.push({ action: 'keep', path: dir, detail: `not empty: ${left.slice(0, 3).join(', ')}${left.length > 3 ? ', …' : ''}` });
      continue;
    }
    steps.push({ action: 'rmdir', path: dir });
    removed.add(dir);
    if (!o.dryRun) rmdirSync(dir);
  }
  return steps;
}
