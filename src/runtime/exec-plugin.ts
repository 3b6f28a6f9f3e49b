/**
 * Runs one plugin process as libcni's `RawExec` does: the runtime's environment plus the CNI_*
 * variables, the config on stdin, stdout captured; a non-zero exit becomes a PluginError with
 * the CNI error JSON the plugin printed parsed into code/msg/details (or a message quoting
 * stderr/stdout when it printed none or garbage). Bounded: after `timeoutMs` the plugin's whole
 * process group (it may have started its IPAM delegate) is killed → PluginTimeoutError.
 */
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { PluginError, PluginTimeoutError } from './errors.js';

/** The CNI environment of one call (libcni's invoke.Args). */
export interface PluginArgs {
  readonly command: string;
  readonly containerId: string;
  readonly netns: string;
  readonly ifname: string;
  /** CNI_ARGS pairs, joined as `K=V;K2=V2`. */
  readonly args: readonly (readonly [string, string])[];
  /** CNI_PATH: the bin dirs. */
  readonly path: readonly string[];
}

export interface ExecOptions {
  readonly timeoutMs: number;
  /** Where the plugin's stderr goes after a success (libcni copies it to its own). */
  readonly onStderr?: (text: string) => void;
}

/** The plugin's environment: ours, with every CNI_* variable replaced (as AsEnv + dedupEnv). */
export function pluginEnv(a: PluginArgs): NodeJS.ProcessEnv {
  return {
    ...process.env,
    CNI_COMMAND: a.command,
    CNI_CONTAINERID: a.containerId,
    CNI_NETNS: a.netns,
    CNI_ARGS: a.args.map(([k, v]) => `${k}=${v}`).join(';'),
    CNI_IFNAME: a.ifname,
    CNI_PATH: a.path.join(':'),
  };
}

interface Run {
  readonly stdout: string;
  readonly stderr: string;
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly timedOut: boolean;
}

function runOnce(bin: string, stdin: Buffer, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<Run> {
  return new Promise((resolve, reject) => {
    // Its own process group, so a timeout kills the delegates it started as well.
    const child = spawn(bin, [], { env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.stdin.on('error', () => {}); // a plugin may exit before reading its stdin
    child.stdin.end(stdin);
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    }, timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    const done = (code: number | null, signal: NodeJS.Signals | null) => {
      clearTimeout(timer);
      resolve({ stdout, stderr, code, signal, timedOut });
    };
    child.on('close', done);
    // A daemon the plugin left behind may hold its stdout open: after the exit, wait a moment
    // for the output, not for the daemon.
    child.on('exit', (code, signal) => setTimeout(() => done(code, signal), 1000).unref());
  });
}

/** The PluginError for a failed run, with the CNI error JSON parsed when there is one. */
function failure(plugin: string, verb: string, r: Run): PluginError {
  const err = (code: number | undefined, msg: string, details?: string) => new PluginError(plugin, verb, code, msg, details, r.code, r.signal, r.stderr);
  const how = r.signal ? `killed by ${r.signal}` : `exit status ${r.code}`;
  const out = r.stdout.trim();
  if (out === '') {
    const e = r.stderr.trim();
    return err(undefined, e ? `netplugin failed (${how}): ${JSON.stringify(e)}` : `netplugin failed with no error message (${how})`);
  }
  let j: unknown;
  try {
    j = JSON.parse(out);
  } catch (e) {
    return err(undefined, `netplugin failed (${how}) but its error message is not JSON: ${JSON.stringify(out.slice(0, 200))}: ${(e as Error).message}`);
  }
  const o = (j ?? {}) as Record<string, unknown>;
  const code = typeof o.code === 'number' ? o.code : undefined;
  const msg = typeof o.msg === 'string' && o.msg ? o.msg : `netplugin failed (${how}): ${out.slice(0, 200)}`;
  return err(code, msg, typeof o.details === 'string' && o.details ? o.details : undefined);
}

/**
 * Runs `bin` for `verb`; resolves with its stdout on exit 0. A binary that is busy being written
 * (ETXTBSY) is retried up to 5 times a second apart, as libcni does.
 */
export async function execPlugin(bin: string, plugin: string, stdin: Buffer, args: PluginArgs, opts: ExecOptions): Promise<string> {
  const env = pluginEnv(args);
  let r: Run | undefined;
  for (let attempt = 0; ; attempt++) {
    try {
      r = await runOnce(bin, stdin, env, opts.timeoutMs);
      break;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ETXTBSY' && attempt < 5) {
        await sleep(1000);
        continue;
      }
      throw new PluginError(plugin, args.command, undefined, `cannot execute ${bin}: ${(e as Error).message}`, undefined, null, null, '', {
        cause: e,
      });
    }
  }
  if (r.timedOut) throw new PluginTimeoutError(plugin, args.command, opts.timeoutMs);
  if (r.code !== 0) throw failure(plugin, args.command, r);
  if (r.stderr && opts.onStderr) opts.onStderr(r.stderr);
  return r.stdout;
}
