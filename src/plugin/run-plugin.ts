/**
 * The CNI plugin entry: environment + stdin in, result or error JSON on stdout, exit code out —
 * never a stack trace. VERSION is answered before anything else is loaded (it needs no stdin and
 * no config); every other verb goes through `dispatch.ts`. Start-up is paid per pod, so this
 * file imports almost nothing and reaches node:fs without the ESM facade (see below).
 */
import { versionAnswer } from '../cni/version.js';

type Fs = typeof import('node:fs');
type Errors = Pick<typeof import('./dispatch.js'), 'CniCode' | 'CniError'>;

/** Runs one plugin invocation from process.env and stdin; returns the exit code. Never throws. */
export async function runPlugin(): Promise<number> {
  // process.getBuiltinModule (Node >= 20.16) skips the facade an ESM import of node:fs builds,
  // which loads the whole streams stack (~2.5 ms).
  const fs: Fs = process.getBuiltinModule?.('node:fs') ?? (await import('node:fs'));
  const env = process.env;
  if (env.CNI_COMMAND === 'VERSION') {
    write(fs, versionAnswer());
    return 0;
  }
  const d = await import('./dispatch.js');
  let text: string | undefined;
  let failure: unknown;
  const stdin = (): string => {
    // eslint-disable-next-line @typescript-eslint/only-throw-error -- the failure caught below, rethrown as it was
    if (failure !== undefined) throw failure;
    try {
      return (text ??= readStdin(fs, d));
    } catch (e) {
      throw (failure = e);
    }
  };
  // A config naming an agent (its parsed `ipam.agent`, dispatch.ts agentOf) is served by that
  // agent, as the native shim does (unless the shim already found no agent and ran us as its
  // standalone fallback). The client (src/wire) is loaded only then.
  if (env.PODIPAM_SHIM_FALLBACK !== '1') {
    let input: string | undefined;
    try {
      input = stdin();
    } catch {
      // reported by dispatch, in the order the Go skel checks things
    }
    const agent = input === undefined ? undefined : d.agentOf(input);
    if (input !== undefined && agent) {
      const { forwardCall } = await import('../wire/forward-call.js');
      let answer: { status: number; output: string } | undefined;
      try {
        answer = await forwardCall(agent.socket, env, input, agent.standalone);
      } catch (e) {
        const { errorJson } = await import('./plugin-call.js');
        answer = { status: 1, output: errorJson(e) };
      }
      if (answer) {
        write(fs, answer.output);
        if (answer.status !== 0) await logFailure(fs, answer.output);
        return answer.status;
      }
    }
  }
  const { pluginCall } = await import('./plugin-call.js');
  const answer = await pluginCall(env, stdin);
  if (answer.output) write(fs, answer.output);
  if (answer.status !== 0) await logFailure(fs, answer.output);
  return answer.status;
}

/** Appends the error answered to the CNI failure log (src/plugin/failure-log.ts); never throws. */
async function logFailure(fs: Fs, answer: string): Promise<void> {
  try {
    const { appendFailure } = await import('./failure-log.js');
    const err = JSON.parse(answer) as { code: number; msg: string; details?: string };
    const env = process.env;
    appendFailure(fs, env, {
      command: env.CNI_COMMAND,
      containerId: env.CNI_CONTAINERID,
      ifname: env.CNI_IFNAME,
      netns: env.CNI_NETNS,
      code: err.code,
      msg: err.msg,
      details: err.details,
    });
  } catch {
    // the answer on stdout is what counts
  }
}

/** Stdin trouble: an errno-style error, which `cniErrorOf` reports as code 5 (I/O failure). */
function stdinError(msg: string): Error {
  return Object.assign(new Error(msg), { code: 'EIO' });
}

/**
 * The most stdin the plugin reads: a network config is kilobytes (a conflist's prevResult a few
 * more), so 1 MiB is generous. Larger input is refused as code 7 as soon as the limit is
 * passed, without reading (or holding) the rest.
 */
export const MAX_STDIN_BYTES = 1 << 20;

/**
 * Reads stdin to EOF, at most MAX_STDIN_BYTES. A non-blocking descriptor (shared with a parent
 * that set O_NONBLOCK) is polled until EOF, for at most 30 s.
 */
function readStdin(fs: Fs, errors: Errors): string {
  const buf = Buffer.allocUnsafe(MAX_STDIN_BYTES + 1);
  const sleeper = new Int32Array(new SharedArrayBuffer(4));
  let len = 0;
  for (let waited = 0; len < buf.length;) {
    let n: number;
    try {
      n = fs.readSync(0, buf, len, buf.length - len, null);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      // No stdin at all (closed descriptor) reads as empty, like Go's io.ReadAll on a closed file.
      if ((code === 'EBADF' || code === 'EINVAL') && len === 0) return '';
      if (code !== 'EAGAIN') throw stdinError(`error reading from stdin: ${(e as Error).message}`);
      if (waited >= 30_000) throw stdinError('error reading from stdin: no end of input after 30s');
      Atomics.wait(sleeper, 0, 0, 2);
      waited += 2;
      continue;
    }
    if (n === 0) return buf.toString('utf8', 0, len);
    len += n;
  }
  throw new errors.CniError(errors.CniCode.InvalidConfig, `network configuration on stdin is larger than the limit of ${MAX_STDIN_BYTES} bytes (1 MiB)`);
}

/** Writes all of `s` to fd 1 synchronously (a non-blocking pipe is retried, bounded). */
function write(fs: Fs, s: string): void {
  const b = Buffer.from(s);
  const sleeper = new Int32Array(new SharedArrayBuffer(4));
  for (let off = 0, tries = 0; off < b.length && tries < 10_000;) {
    try {
      off += fs.writeSync(1, b, off);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EAGAIN') return; // stdout gone (EPIPE): no one to tell
      Atomics.wait(sleeper, 0, 0, 1);
      tries++;
    }
  }
}
