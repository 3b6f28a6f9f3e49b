/**
 * The Node.js side of the agent protocol (frame.ts), as the native shim speaks it: used by
 * bin/podipam for configs that name an agent, by `podipam agent status`, and by tests.
 * One connection per call; bounded connect and answer timeouts.
 */
import { connect } from 'node:net';
import { type Answer, type Request, answerReader, encodeRequest } from './frame.js';

/** The agent could not be asked: `absent` when nothing listens (no socket, refused). */
export class AgentUnreachableError extends Error {
  override readonly name = 'AgentUnreachableError';
  constructor(
    readonly socket: string,
    readonly absent: boolean,
    message: string,
  ) {
    super(`podipam agent at ${socket}: ${message}`);
  }
}

export interface CallOptions {
  readonly connectTimeoutMs?: number;
  readonly answerTimeoutMs?: number;
}

/** The environment a call carries to the agent: CNI_*, PODIPAM_* and NODENAME, as the shim sends (and the agent accepts). */
export function forwardedEnv(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) {
    if (v !== undefined && (k.startsWith('CNI_') || k.startsWith('PODIPAM_') || k === 'NODENAME')) out[k] = v;
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
      finish(new AgentUnreachableError(socket, absent, e.code === 'ENOENT' ? 'no such socket' : e.message));
    });
  });
}
