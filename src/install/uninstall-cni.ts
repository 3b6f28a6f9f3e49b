/**
 * `podipam uninstall-cni`: removes exactly what install-cni recorded in its manifest — each
 * file only while its bytes still hash to what install wrote (an edited or replaced file is
 * kept and reported, unless `force`), then the manifest, then the directories install created
 * if they are empty. The config goes before the binary, so no runtime reads a config whose
 * plugin is gone. Nothing recorded: nothing to do.
 */
import { existsSync, readdirSync, rmdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fsyncDir } from './atomic-write.js';
import { fileState } from './file-state.js';
import { manifestPath, readManifest, writeManifest } from './install-manifest.js';
import type { InstallStep } from './install-step.js';

export interface UninstallOptions {
  readonly confDir: string;
  readonly dryRun: boolean;
  readonly force: boolean;
}

export function uninstallCni(o: UninstallOptions): InstallStep[] {
  const manifest = readManifest(o.confDir);
  const steps: InstallStep[] = [];
  const removed = new Set<string>();
  for (const f of [...manifest.files].reverse()) {
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
    // Keep the record of what is left, so `uninstall-cni --force` can still remove it later.
    if (!o.dryRun) writeManifest(o.confDir, { ...manifest, files: kept });
      } else if (existsSync(state)) {
    steps.push({ action: 'remove', path: state });
    removed.add(state);
    if (!o.dryRun) rmSync(state);
  }
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
