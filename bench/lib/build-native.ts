/**
 * Compiles one of the benches' C programs (bench/native/<src>) with `cc` (default $CC, else cc),
 * -O2 and `extra` flags, into `out`; returns `out`. Throws naming the source and the compiler's error.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export function buildNative(src: string, out: string, extra: readonly string[] = [], cc = process.env.CC || 'cc'): string {
  const path = fileURLToPath(new URL(`../../../bench/native/${src}`, import.meta.url));
  const r = spawnSync(cc, [...extra, '-O2', '-o', out, path], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`cannot build ${path} with ${cc}: ${r.error?.message ?? r.stderr}`);
  return out;
}
