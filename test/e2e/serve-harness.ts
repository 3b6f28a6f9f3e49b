/**
 * Shared by the serve-*, dashboard and import e2e tests: start `bin/podipam serve` as a real
 * process on a free loopback port with its own data directory, call its API, run other
 * `bin/podipam` commands. Every wait is bounded.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { PODIPAM_BIN } from '../helpers/plugin.js';
import { makeTempDir, type TempDir } from '../helpers/tmp.js';

export interface ServeProcess {
  /** http://HOST:PORT of the API (no trailing slash, no token). */
  readonly url: string;
  /** The dashboard URL serve printed (with `?token=` when the install token guards writes). */
  readonly dashboardUrl: string;
  /** The install token serve printed, when it runs without read/admin tokens. */
  readonly installToken?: string;
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
  const args = o.rawArgs ? ['serve', ...(o.args ?? [])] : ['serve', '--listen', '127.0.0.1:0', '--data-dir', dataDir, '--gc-interval', '0', ...(o.args ?? [])];
  const child = spawn(process.execPath, [PODIPAM_BIN, ...args], { env: baseEnv(o.env), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const dashboardUrl = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start within 20 s\nstdout: ${out}\nstderr: ${err}`)), 20_000);
    const onData = (): void => {
      // The banner ends with the "Try:" line; wait for all of it.
      const m = /dashboard and API on (https?:\/\/\S+) /.exec(out);
      if (m && /^Try: /m.test(out)) {
        clearTimeout(timer);
        resolve(m[1] as string);
      }
    };
    child.stdout.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code} before it was ready\nstdout: ${out}\nstderr: ${err}`));
    });
  });
  const parsed = new URL(dashboardUrl);
  const installToken = parsed.searchParams.get('token') ?? undefined;
  const url = `${parsed.protocol}//${parsed.host}`;
  if (installToken !== undefined) installTokens.set(url, installToken);
  return {
    url,
    dashboardUrl,
    installToken,
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
      installTokens.delete(url);
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
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
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

/**
 * The install token of each running serve by its URL: `api()` sends it when no token is given,
 * as a user who opened the printed dashboard URL would (give '' to send none).
 */
const installTokens = new Map<string, string>();

/** One API call; `token` adds a bearer header (default: the server's install token); a string body is sent as is. */
export async function api(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  token?: string,
  contentType = 'application/json',
  extraHeaders: Readonly<Record<string, string>> = {},
): Promise<ApiAnswer> {
  token ??= installTokens.get(base);
  const headers: Record<string, string> = { ...extraHeaders };
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

/**
 * API calls with `token` that assert their outcome: `ok` the status (200 unless given), returning
 * the body; `bad` the status, the error code and (when given) the field named, returning the
 * error's message.
 */
export function apiAs(
  base: string,
  token: string,
): {
  ok: (method: string, path: string, body: unknown, status?: number) => Promise<any>;
  bad: (method: string, path: string, body: unknown, status: number, code: string, field?: string) => Promise<string>;
} {
  return {
    ok: async (method, path, body, status = 200) => {
      const r = await api(base, method, path, body, token);
      assert.equal(r.status, status, `${method} ${path}: ${JSON.stringify(r.body)}`);
      return r.body;
    },
    bad: async (method, path, body, status, code, field) => {
      const r = await api(base, method, path, body, token);
      assert.equal(r.status, status, `${method} ${path}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error.code, code, JSON.stringify(r.body));
      if (field) assert.equal(r.body.error.field, field, JSON.stringify(r.body));
      return r.body.error.message as string;
    },
  };
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

/** podipam_gc_runs_total{result="ok"} from serve's /metrics (cluster GC runs completed). */
export async function gcRuns(url: string): Promise<number> {
  const m = (await api(url, 'GET', '/metrics')).body as string;
  const v = /^podipam_gc_runs_total\{result="ok"\} (\d+)$/m.exec(m);
  if (!v) throw new Error('no podipam_gc_runs_total{result="ok"} in /metrics');
  return Number(v[1]);
}
