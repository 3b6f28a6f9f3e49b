/**
 * Runs a CNI plugin (podipam's bin/podipam or a reference plugin such as
 * /usr/lib/cni/host-local) as a process: CNI_* environment + stdin in, stdout/stderr and the
 * exit status out — the way a runtime does.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { requireExecutable } from './prereq.js';

/** The repository root (this file is dist/test/helpers/plugin.js once compiled). */
export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
export const PODIPAM_BIN = `${REPO_ROOT}bin/podipam`;
export const HOST_LOCAL_BIN = '/usr/lib/cni/host-local';
export const BRIDGE_BIN = '/usr/lib/cni/bridge';

export interface PluginCall {
  readonly command: string;
  readonly containerId?: string;
  readonly ifname?: string;
  /** Default `/var/run/netns/podipam-test` (IPAM plugins never enter it). */
  readonly netns?: string;
  readonly args?: string;
  /** CNI_PATH; default /usr/lib/cni. */
  readonly path?: string;
  /** The network config: an object is JSON-encoded, a string is sent as is. */
  readonly config?: unknown;
  /** Extra environment (overrides the CNI_* set from the fields above; `undefined` unsets). */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

export interface PluginRun {
  readonly stdout: string;
  readonly stderr: string;
  /** Exit code, or null when killed by a signal. */
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** Wall time in milliseconds. */
  readonly ms: number;
}

/** The environment a runtime gives the plugin for `call` (PATH, the CNI_* set, failures not logged). */
export function callEnv(call: PluginCall): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
  const set = (k: string, v: string | undefined) => {
    if (v !== undefined) env[k] = v;
  };
  set('CNI_COMMAND', call.command);
  set('CNI_CONTAINERID', call.containerId);
  set('CNI_IFNAME', call.ifname);
  set('CNI_NETNS', call.netns ?? '/var/run/netns/podipam-test');
  set('CNI_ARGS', call.args);
  set('CNI_PATH', call.path ?? '/usr/lib/cni');
  // The plugin appends its failures to /var/log/podipam/cni.log by default: not from tests.
  set('PODIPAM_CNI_LOG', '/dev/null');
  for (const [k, v] of Object.entries(call.env ?? {})) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return env;
}

/** The stdin of `call`: its config, JSON-encoded unless a string. */
export function stdinOf(call: PluginCall): string {
  if (call.config === undefined) return '';
  return typeof call.config === 'string' ? call.config : JSON.stringify(call.config);
}

/** Runs `bin` once and waits for it (synchronously). */
export function runPluginSync(bin: string, call: PluginCall): PluginRun {
  requireExecutable(bin);
  const t0 = performance.now();
  const r = spawnSync(bin, [], { env: callEnv(call), input: stdinOf(call), encoding: 'utf8', timeout: 30_000 });
  // A plugin that fails before reading stdin (bad env, bad CNI_ARGS) may close it while we still
  // write: EPIPE then is ours, not the plugin's, and its exit status and output are complete.
  const error: NodeJS.ErrnoException | undefined = r.error;
  const epipe = error?.code === 'EPIPE' && r.status !== null;
  if (r.error && !epipe) throw r.error;
  return { stdout: r.stdout, stderr: r.stderr, code: r.status, signal: r.signal, ms: performance.now() - t0 };
}

/** A started plugin process: `child` to signal it, `done` settles when it has exited. */
export interface StartedPlugin {
  readonly child: ChildProcess;
  readonly done: Promise<PluginRun>;
}

/** Starts `bin` without waiting (for concurrency and kill tests). */
export function startPlugin(bin: string, call: PluginCall): StartedPlugin {
  requireExecutable(bin);
  const t0 = performance.now();
  const child = spawn(bin, [], { env: callEnv(call), stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  child.stdin.on('error', () => {}); // a plugin killed early closes its stdin
  child.stdin.end(stdinOf(call));
  const done = new Promise<PluginRun>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ stdout, stderr, code, signal, ms: performance.now() - t0 }));
  });
  return { child, done };
}

/** Runs `bin` once and waits for it (asynchronously). */
export function runPlugin(bin: string, call: PluginCall): Promise<PluginRun> {
  return startPlugin(bin, call).done;
}

/** Parses a run's stdout as JSON (undefined when empty). */
export function stdoutJson(run: PluginRun): any {
  return run.stdout === '' ? undefined : JSON.parse(run.stdout);
}

/** Runs `bin/podipam --datastore URL ARGS…` (the CLI) and waits for it. */
export function runCliSync(datastore: string, args: readonly string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(PODIPAM_BIN, ['--datastore', datastore, ...args], { encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** A cluster-mode plugin call: network `network`, node `node`, eth0, hint files in `cacheDir`. */
export function clusterCall(network: string, datastore: string, cacheDir: string, command: string, id: string, node: string): PluginCall {
  return {
    command,
    containerId: id,
    ifname: 'eth0',
    config: { cniVersion: '1.0.0', name: network, ipam: { type: 'podipam', datastore, nodeName: node, cacheDir } },
  };
}
