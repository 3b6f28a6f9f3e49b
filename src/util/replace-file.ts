/**
 * Replaces a small file whole: write `<path>.<pid>.tmp`, then rename it over `path`, so a
 * reader (or a crash) never sees half a file. The temp file is removed when the write fails.
 * Used by the plugin's caches (the cluster node's hints, usePodCidr's pod CIDRs); takes fs
 * without the ESM facade (builtins.ts), as the per-pod plugin does.
 */
import { fs } from './builtins.js';

export function replaceFile(path: string, data: string, mode: number): void {
  const tmp = `${path}.${process.pid}.tmp`;
  try {
    fs.writeFileSync(tmp, data, { mode });
    fs.renameSync(tmp, path);
  } catch (e) {
    fs.rmSync(tmp, { force: true });
    throw e;
  }
}
