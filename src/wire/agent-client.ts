/**
 * The Node.js side of the agent protocol (frame.ts), as the native shim speaks it: used by
 * bin/podipam for configs that name an agent, by `podipam agent status`, and by tests.
 * One connection per call; bounded connect and answer timeouts. The agent must run as root or
 * as our own uid (SO_PEERCRED, native/peercred.c), as the shim requires: any other process on
 * that path could answer with addresses of its choosing.
 */
import { connect } from 'node:net';
import { type Answer, type Request, answerReader, encodeRequest } from './frame.js';
import { peerCredentials } from './peer-credentials.js';

/**
 * The agent could not be asked: `absent` when nothing listens (no socket, refused); `denied`
 * when the socket refused us (EACCES: its mode admits only root and the agent's uid), which
 * trying again cannot change.
 */
export class AgentUnreachableError extends Error {
  override readonly name = 'AgentUnreachableError';
  constructor(
    readonly socket: string,
    readonly absent: boolean,
    message: string,
    readonly denied = false,
  ) {
    super(`podipam agent at ${socket}: ${message}`);
  }
}

/** Why the peer of a connected agent socket is not trusted, or undefined: root or our own uid. */
function untrustedPeer(conn: import('node:net').Socket): string | undefined {
  const me = process.geteuid?.() ?? 0;
  const fd = (conn as unknown as { _handle?: { fd?: number } })._handle?.fd;
  if (typeof fd !== 'number' || fd < 0) return `cannot read its credentials (no descriptor)`;
  let uid: number;
  try {
    uid = peerCredentials(fd).uid;
  } catch (e) {
    return `SO_PEERCRED: ${(e as Error).message}`;
  }
  return uid === 0 || uid === me ? undefined : `runs as uid ${uid}, not root or uid ${me}: refused`;
}

export interface CallOptions {
  readonly connectTimeoutMs?: number;
  readonly answerTimeoutMs?: number;
}

/**
 * The environment a call carries to the agent: CNI_*, PODIPAM_*, NODENAME and NODE_NAME, as the shim
 * sends (and the agent accepts). A dictionary with no prototype: objects built key by key take a
 * hidden class per set and order of keys, and each runtime (and the agent's warm-up) orders its
 * environment its own way, so code V8 optimised for one caller's environments was thrown away at
 * the next caller's first call (measured: the agent's ADD p99 tail after a start). Every
 * environment shares this one shape.
 */
export function forwardedEnv(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const out = Object.create(null) as Record<string, string>;
  for (const [k, v] of Object.entries(env)) {
    if (v !== undefined && (k.startsWith('CNI_') || k.startsWith('PODIPAM_') || k === 'NODENAME' || k === 'NODE_NAME')) out[k] = v;
  }
  return out;
}

export function callAgent(socket: string, req: Request, opts: CallOptions = {}): Promise<Answer> {
  const connectMs = opts.connectTimeoutMs ?? 2000;
  const answerMs = opts.answerTimeoutMs ?? 60_000;
  return new Promise((resolve, reject) => {
    const conn = connect(socket);
    const reader = answerReader();
    let connected = false;
    let done = false;
    const finish = (err: Error | undefined, a?: Answer): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      conn.destroy();
      if (err) reject(err);
      else resolve(a!);
    };
    let timer = setTimeout(() => finish(new AgentUnreachableError(socket, false, `no connection within ${connectMs} ms`)), connectMs);
    conn.on('connect', () => {
      connected = true;
      clearTimeout(timer);
      const untrusted = untrustedPeer(conn);
      if (untrusted) {
        finish(new AgentUnreachableError(socket, false, untrusted));
        return;
      }
      timer = setTimeout(() => finish(new AgentUnreachableError(socket, false, `no answer within ${answerMs} ms`)), answerMs);
      conn.write(encodeRequest(req));
    });
    conn.on('data', (chunk: Buffer) => {
      try {
        const a = reader.push(chunk);
        if (a) finish(undefined, a);
      } catch (e) {
        finish(new AgentUnreachableError(socket, false, `answered garbage: ${(e as Error).message}`));
      }
    });
    conn.on('end', () => finish(new AgentUnreachableError(socket, false, 'closed the connection before answering')));
    conn.on('error', (e: NodeJS.ErrnoException) => {
      const absent = !connected && (e.code === 'ENOENT' || e.code === 'ECONNREFUSED' || e.code === 'ENOTSOCK');
      if (!connected && (e.code === 'EACCES' || e.code === 'EPERM')) {
        finish(new AgentUnreachableError(socket, false, permissionDenied(), true));
        return;
      }
      finish(new AgentUnreachableError(socket, absent, e.code === 'ENOENT' ? 'no such socket' : e.message));
    });
  });
}

/** The message for a socket that refused us (the shim words it the same way). */
function permissionDenied(): string {
  const me = process.geteuid?.() ?? 0;
  return `permission denied connecting as uid ${me}: the socket admits root and the agent's uid (run the caller as root, or run the agent as uid ${me})`;
}
