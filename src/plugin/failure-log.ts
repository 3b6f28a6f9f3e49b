/**
 * The per-pod plugin's failure log: runtimes often drop a plugin's stderr, so every error the
 * plugin answers is also appended, one JSON line, to `$PODIPAM_CNI_LOG` (default
 * /var/log/podipam/cni.log). Size-bounded: past MAX_BYTES the file is renamed to `<file>.1`
 * (replacing an older one) and a new one begun, so the two never pass 2 × MAX_BYTES. Plain
 * node:fs on the hot path (no logger library); it never throws: logging must not fail a pod.
 * No line carries a raw control character (JSON.stringify escapes C0; the rest is escaped too).
 */
import { escapeControls } from '../util/quote-text.js';

type Fs = typeof import('node:fs');

export const DEFAULT_CNI_LOG = '/var/log/podipam/cni.log';
export const MAX_BYTES = 1024 * 1024;

export interface FailureEntry {
  readonly command?: string;
  readonly containerId?: string;
  readonly ifname?: string;
  readonly netns?: string;
  readonly code: number;
  readonly msg: string;
  readonly details?: string;
}

/** Appends one line for `entry`; returns the file written, or undefined when it could not. */
export function appendFailure(fs: Fs, env: NodeJS.ProcessEnv, entry: FailureEntry, maxBytes = MAX_BYTES): string | undefined {
  const file = env.PODIPAM_CNI_LOG || DEFAULT_CNI_LOG;
  const line = `${escapeControls(JSON.stringify({ time: new Date().toISOString(), level: 'error', component: 'cni', pid: process.pid, ...entry }))}\n`;
  try {
    try {
      if (fs.statSync(file).size + line.length > maxBytes) fs.renameSync(file, `${file}.1`);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      // Only the log's own directory (/var/log/podipam), not recursively: Node's recursive mkdir
      // loops forever on a path it cannot create in a pseudo file system such as /proc.
      try {
        fs.mkdirSync(file.slice(0, Math.max(1, file.lastIndexOf('/'))), { mode: 0o755 });
      } catch (e2) {
        if ((e2 as NodeJS.ErrnoException).code !== 'EEXIST') throw e2;
      }
    }
    // O_APPEND: concurrent plugins' lines interleave whole, never torn (each is one write).
    fs.appendFileSync(file, line, { mode: 0o640 });
    return file;
  } catch {
    return undefined;
  }
}
