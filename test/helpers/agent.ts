/**
 * `podipam agent` processes for tests: started on a socket in a private temp directory, ready
 * once `agent status` answers over the socket; stopped with SIGTERM (or killed). The shim built
 * by `npm run build` is SHIM_BIN.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { callAgent } from '../../src/wire/agent-client.js';
import type { AgentStatus } from '../../src/agent/agent-stats.js';
import { PODIPAM_BIN, REPO_ROOT } from './plugin.js';

export const SHIM_BIN = `${REPO_ROOT}dist/bin/podipam-cni`;

/** The warm-up a test's agent runs unless its arguments name one (the agent's default is longer). */
export const TEST_WARM_UP = '300ms';

/** A space-separated list of flags from the environment (empty when unset). */
export const words = (s: string | undefined): string[] => (s ?? '').split(' ').filter((a) => a !== '');

/** A warm pool's sizing flags for `podipam agent`. */
export const warmSizing = (minIdle: number, maxIdle: number, capacity: number): string[] => [
  '--min-idle',
  String(minIdle),
  '--max-idle',
  String(maxIdle),
  '--capacity',
  String(capacity),
];

/**
 * startAgent's option for an agent run as the product ships it (the benches): the agent's own
 * warm-up and defaults; PODIPAM_BENCH_AGENT_NODE_ARGS: flags for node itself, space-separated (an
 * A/B of V8's flags; none by default, as the DaemonSet and the unit start it);
 * PODIPAM_BENCH_AGENT_ARGS: more agent flags, space-separated (an A/B of `--optimize always`,
 * `--warm-up 1s`; none by default).
 */
export const AS_SHIPPED = {
  warmUp: null,
  nodeArgs: words(process.env.PODIPAM_BENCH_AGENT_NODE_ARGS),
  moreArgs: words(process.env.PODIPAM_BENCH_AGENT_ARGS),
} as const;

/** iproute2's `ip`, by absolute path (an agent under test may get a PATH without it). */
const IP_BIN = ['/usr/sbin/ip', '/sbin/ip', '/usr/bin/ip', '/bin/ip'].find((p) => existsSync(p)) ?? 'ip';

export interface RunningAgent {
  readonly socket: string;
  readonly child: ChildProcess;
  /** Everything the agent wrote on stderr so far. */
  log(): string;
  status(): Promise<AgentStatus>;
  /** SIGTERM; resolves with the exit code once it has exited. */
  stop(): Promise<number | null>;
  /** SIGKILL; resolves once it has exited. */
  kill(): Promise<void>;
  readonly exited: Promise<number | null>;
}

const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

/** Fails (with the reason) when the shim was not built: tests of the shim must not skip. */
export function requireShim(): void {
  if (!existsSync(SHIM_BIN)) throw new Error(`${SHIM_BIN} is missing: npm run build compiles native/shim/podipam-cni.c (needs a C compiler)`);
}

/**
 * Starts `podipam agent` on `socket`. Its masquerade is off (the host's nat table is not the
 * tests'); `--masquerade` in `args` turns it on, for an agent run in a namespace of the test
 * (`o.netns`: started through `ip netns exec`, whatever PATH `env` gives it). `o.launcher`: a
 * command the agent runs under (e.g. `setpriv --inh-caps=-sys_nice …`), node and its arguments appended.
 * `o.warmUp`: its --warm-up (default TEST_WARM_UP; null: the agent's own default, as the benches run it).
 * `o.nodeArgs`: flags for node itself (e.g. `--cpu-prof`, which NODE_OPTIONS refuses).
 * `o.moreArgs`: agent flags after `args` (AS_SHIPPED's from the environment).
 */
export async function startAgent(
  socket: string,
  args: readonly string[] = [],
  env: NodeJS.ProcessEnv = {},
  o: {
    readonly netns?: string;
    readonly launcher?: readonly string[];
    readonly warmUp?: string | null;
    readonly nodeArgs?: readonly string[];
    readonly moreArgs?: readonly string[];
  } = {},
): Promise<RunningAgent> {
  // A short warm-up unless asked otherwise: the suite starts many agents on a shared machine.
  const all = [...args, ...(o.moreArgs ?? [])];
  const warmUp = all.includes('--warm-up') || o.warmUp === null ? [] : ['--warm-up', o.warmUp ?? TEST_WARM_UP];
  const argv = [PODIPAM_BIN, 'agent', '--socket', socket, '--metrics-listen', 'off', '--no-masquerade', ...warmUp, ...all];
  const node = [...(o.launcher ?? []), process.execPath, ...(o.nodeArgs ?? [])];
  const [cmd, cmdArgs] = o.netns === undefined ? [node[0]!, [...node.slice(1), ...argv]] : [IP_BIN, ['netns', 'exec', o.netns, ...node, ...argv]];
  const child = spawn(cmd, cmdArgs, {
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  live.add(child);
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => (live.delete(child), resolve(code))));
  let gone = false;
  void exited.then(() => (gone = true));
  const status = async (): Promise<AgentStatus> =>
    JSON.parse((await callAgent(socket, { kind: 'status' }, { connectTimeoutMs: 2000, answerTimeoutMs: 5000 })).body.toString('utf8')) as AgentStatus;
  for (let i = 0; ; i++) {
    if (gone) throw new Error(`agent on ${socket} exited before it was ready:\n${stderr}`);
    try {
      await status();
      break;
    } catch {
      if (i > 300) {
        child.kill('SIGKILL');
        throw new Error(`agent on ${socket} not ready after 15 s:\n${stderr}`);
      }
      await sleep(50);
    }
  }
  return {
    socket,
    child,
    log: () => stderr,
    status,
    exited,
    stop: async () => {
      if (!gone) child.kill('SIGTERM');
      return exited;
    },
    kill: async () => {
      if (!gone) child.kill('SIGKILL');
      await exited;
    },
  };
}

/**
 * Waits until `agent`'s warm pool is ready with at least `idle` idle addresses of each of
 * `families`, polling its status every `everyMs`; an Error naming `what` and the last status
 * after `tries` polls.
 */
export async function warmPoolFilled(
  agent: Pick<RunningAgent, 'status'>,
  idle: number,
  o: { readonly families: readonly ('ipv4' | 'ipv6')[]; readonly what: string; readonly everyMs?: number; readonly tries?: number },
): Promise<void> {
  for (let i = 0; ; i++) {
    const w = (await agent.status()).warmPool;
    if (w?.ready && o.families.every((f) => (w.pools[f]?.idle ?? 0) >= idle)) return;
    if (i >= (o.tries ?? 600))
      throw new Error(`${o.what}: the warm pool did not reach ${idle} idle addresses of ${o.families.join(' and ')}: ${JSON.stringify(w)}`);
    await new Promise((r) => setTimeout(r, o.everyMs ?? 50));
  }
}
