/**
 * Crash-point runs (src/util/crash-point.ts): the environment that arms a point, the assertion
 * that a process died there (SIGKILL and the hook's own line on stderr, so a kill from anywhere
 * else cannot pass for it), and a record of the points reached, so a test can prove it reached
 * every listed point.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { CRASH_AT_ENV, TEST_HOOKS_ENV, type CrashPointName } from '../../src/util/crash-point.js';
import type { Store } from '../../src/store/index.js';
import { PODIPAM_BIN } from './plugin.js';

/** Points some process of this test run died at (asserted by expectCrash). */
export const reached = new Set<CrashPointName>();

/** The environment arming `spec` (`name` or `name@n`). */
export function crashEnv(spec: string): Record<string, string> {
  return { [TEST_HOOKS_ENV]: '1', [CRASH_AT_ENV]: spec };
}

export function pointOf(spec: string): CrashPointName {
  return spec.split('@')[0] as CrashPointName;
}

/** The hook's line: only a process that reached the point writes it, right before its SIGKILL. */
export function crashLine(spec: string): string {
  return `crash point ${pointOf(spec)} reached`;
}

/** Asserts that a run died at `spec`'s point, and records it as reached. */
export function expectCrash(
  run: { readonly signal: NodeJS.Signals | null; readonly code: number | null; readonly stdout: string; readonly stderr: string },
  spec: string,
  what: string,
): void {
  assert.equal(run.signal, 'SIGKILL', `${what} with ${CRASH_AT_ENV}=${spec} was not killed: exit ${run.code}\n${run.stdout}\n${run.stderr}`);
  assert.ok(run.stderr.includes(crashLine(spec)), `${what} was killed, but not by crash point ${spec}:\n${run.stderr}`);
  reached.add(pointOf(spec));
}

/** An agent process armed with a crash point: waits for it to die there. */
export interface ArmedAgent {
  readonly child: ChildProcess;
  /** Resolves once it exited: signal and stderr. */
  readonly exited: Promise<{ signal: NodeJS.Signals | null; code: number | null; stderr: string }>;
}

/** Starts `podipam agent` armed with `spec`, without waiting for it to be ready (it may die starting). */
export function startArmedAgent(socket: string, args: readonly string[], spec: string): ArmedAgent {
  const child = spawn(process.execPath, [PODIPAM_BIN, 'agent', '--socket', socket, '--metrics-listen', 'off', '--no-masquerade', ...args], {
    env: { PATH: process.env.PATH, ...crashEnv(spec) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const onExit = () => child.kill('SIGKILL');
  process.on('exit', onExit);
  const exited = new Promise<{ signal: NodeJS.Signals | null; code: number | null; stderr: string }>((resolve) =>
    child.on('close', (code, signal) => {
      process.off('exit', onExit);
      resolve({ code, signal, stderr });
    }),
  );
  return { child, exited };
}

/** Deletes every key of the store (one etcd shared by consecutive cases). */
export async function wipeStore(store: Store): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    const keys = (await store.list('', { limit: 100 })).map((e) => e.key);
    if (keys.length === 0) return;
    await store.txn(
      [],
      keys.map((key) => ({ type: 'delete' as const, key })),
    );
  }
  throw new Error('the store did not empty');
}
