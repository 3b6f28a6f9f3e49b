/**
 * Shared by the serve-*, dashboard and import e2e tests: start `bin/podipam serve` as a real
 * process on a free loopback port with its own data directory, call its API, run other
 * `bin/podipam` commands. Every wait is bounded.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { PODIPAM_BIN } from '../helpers/plugin.js';
import { makeTempDir, type TempDir } from '../helpers/tmp.js';

export interface ServeProcess {
  readonly url: string;
  readonly dataDir: string;
  /** The SQLite datastore URL of the data directory. */
  readonly datastore: string;
  readonly child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** SIGTERM, then wait for the exit (SIGKILL after 5 s); returns the exit code. */
  stop(): Promise<number | null>;
}

export interface StartOptions {
  /** Extra arguments after `serve` (default: GC off, loopback port 0). */
  readonly args?: readonly string[];
  readonly env?: Readonly<Record<string, string>>;
  /** Reuse a data directory (default: a fresh temp dir, removed by stop()). */
  readonly dataDir?: string;
  /** Replace the default `--data-dir` and `--listen` flags entirely. */
  readonly rawArgs?: boolean;
}

function baseEnv(extra: Readonly<Record<string, string>> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  for (const k of ['PODIPAM_DATASTORE', 'PODIPAM_READ_TOKEN', 'PODIPAM_ADMIN_TOKEN', 'CNI_COMMAND']) if (!(k in extra)) delete env[k];
  return env;
}

export async function startServe(o: StartOptions = {}): Promise<ServeProcess> {
  const tmp: TempDir | undefined = o.dataDir ? undefined : makeTempDir('serve');
  const dataDir = o.dataDir ?? (tmp as TempDir).path;
  const args = o.rawArgs
    ? ['serve', ...(o.args ?? [])]
    : ['serve', '--listen', '127.0.0.1:0', '--data-dir', dataDir, '--gc-interval', '0', ...(o.args ?? [])];
  const child = spawn(process.execPath, [PODIPAM_BIN, ...args], { env: baseEnv(o.env), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start within 20 s\nstdout: ${out}\nstderr: ${err}`)), 20_000);
    const onData = (): void => {
      // The banner ends with the "Try:" line; wait for all of it.
      const m = /dashboard and API on (http:\/\/\S+?)\/? /.exec(out);
      if (m && /^Try: /m.test(out)) {
        clearTimeout(timer);
        resolve(m[1] as string);
      }
    };
    child.stdout!.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code} before it was ready\nstdout: ${out}\nstderr: ${err}`));
    });
  });
  return {
    url,
    dataDir,
    datastore: `sqlite:${dataDir}/podipam.db`,
    child,
    stdout: () => out,
    stderr: () => err,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const kill = setTimeout(() => child.kill('SIGKILL'), 5000);
      const code = await exited;
      clearTimeout(kill);
      tmp?.remove();
      return code;
    },
  };
}

export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `bin/podipam ARGS…` to completion (at most `timeoutMs`). */
export function runCli(args: readonly string[], env: Readonly<Record<string, string>> = {}, timeoutMs = 60_000): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [PODIPAM_BIN, ...args], { env: baseEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

export interface ApiAnswer {
  readonly status: number;
  readonly body: any;
  readonly headers: Headers;
}

/** One API call; `token` adds a bearer header; a string body is sent as is. */
export async function api(base: string, method: string, path: string, body?: unknown, token?: string, contentType = 'application/json'): Promise<ApiAnswer> {
  const headers: Record<string, string> = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = contentType;
  const res = await fetch(base + path, {
    method,
    headers,
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  let parsed: unknown = text;
  if ((res.headers.get('content-type') ?? '').includes('json') && text !== '') parsed = JSON.parse(text);
  return { status: res.status, body: parsed, headers: res.headers };
}

/** Polls `probe` every 100 ms until it returns a value other than undefined, at most `ms`. */
export async function waitFor<T>(what: string, ms: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
