/**
 * The disk's own fsync, sampled beside a datastore while a bench runs: bench/native/fsync-probe.c
 * (built here with the machine's C compiler) rewrites one page and fsyncs it every `everyMs`,
 * only between `sample(true)` and `sample(false)`. For bench/cri.ts: what one durable commit
 * costs on the disk while the runtime writes to it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { buildNative } from './build-native.js';

/** The fsync times sampled, in ms. */
export interface FsyncFigures {
  readonly n: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
}

export interface FsyncProbe {
  /** Resumes (true) or pauses (false) the sampling. */
  sample(on: boolean): void;
  /** Ends the probe and reads its figures; throws if it stopped early or sampled nothing. */
  stop(): Promise<FsyncFigures>;
  /** Ends the probe at once if it still runs (for a bench's `finally`). */
  kill(): void;
}

/** How long the probe runs at most if nobody stops it (it also ends with its parent). */
const MAX_S = 3600;

/** Builds the probe into `dir` and starts it on a file there, paused; resolves once it takes signals. */
export async function startFsyncProbe(dir: string, everyMs: number): Promise<FsyncProbe> {
  if (!Number.isInteger(everyMs) || everyMs < 1 || everyMs > 10_000) throw new Error(`fsync probe: the interval must be an integer 1-10000 ms, got ${everyMs}`);
  const tool = buildNative('fsync-probe.c', join(dir, 'fsync-probe'), ['-Wall', '-Wextra', '-Werror']);
  const child: ChildProcess = spawn(tool, [join(dir, 'fsync-probe.dat'), String(everyMs), String(MAX_S)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (err += b.toString()));
  // 'close': the process has exited and its output is read to the end.
  const closed = once(child, 'close').catch((e: unknown) => [null, String(e)]);
  let spawnError: string | undefined;
  child.on('error', (e) => (spawnError = e.message));
  for (let i = 0; i < 250 && !out.startsWith('ready\n') && child.exitCode === null && spawnError === undefined; i++) await sleep(20);
  if (!out.startsWith('ready\n')) {
    child.kill('SIGKILL');
    await closed;
    throw new Error(`fsync probe did not start: ${spawnError ?? (err || out || 'no output in 5 s')}`);
  }
  return {
    sample(on) {
      if (child.exitCode === null) child.kill(on ? 'SIGUSR2' : 'SIGUSR1');
    },
    async stop() {
      const early = child.exitCode !== null;
      child.kill('SIGTERM');
      const [code] = (await closed) as [number | null];
      const text = out.slice('ready\n'.length).trim();
      if (early || code !== 0) throw new Error(`fsync probe ${early ? 'ended before it was stopped' : 'failed'}: exit ${String(code)}: ${err || text}`);
      const f = text.split(/\s+/).map(Number);
      if (f.length !== 5 || f.some((x) => !Number.isFinite(x))) throw new Error(`fsync probe: unreadable figures ${JSON.stringify(text)}`);
      const [n, p50, p90, p99, max] = f as [number, number, number, number, number];
      if (n === 0) throw new Error('fsync probe: no samples (was it ever resumed?)');
      return { n, p50, p90, p99, max };
    },
    kill() {
      if (child.exitCode === null) child.kill('SIGKILL');
    },
  };
}
