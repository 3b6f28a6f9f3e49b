/**
 * The agent's one Kubernetes client: a kubeconfig file (or the in-cluster service account)
 * loaded once by `openKube`, shared by every part that talks to the API server (the pod cache,
 * the warm pool's pod source, the Node's taints). Besides the generated `coreApi`, it does plain
 * GETs and watch streams itself over the kubeconfig's transport (its agent: TLS, proxy; its
 * headers: the token), so that every request is bounded and can be aborted.
 * `@kubernetes/client-node` is imported on open only.
 */
import * as http from 'node:http';
import * as https from 'node:https';
import type { CoreV1Api, KubeConfig } from '@kubernetes/client-node';

export interface Kube {
  readonly kc: KubeConfig;
  readonly coreApi: CoreV1Api;
  /** `kubeconfig FILE` or `in-cluster service account`, for messages. */
  readonly what: string;
}

/** An API request that failed: `status` is the HTTP status or a watch ERROR event's code (undefined: no answer). */
export class KubeRequestError extends Error {
  override readonly name = 'KubeRequestError';
  constructor(
    message: string,
    readonly status: number | undefined,
    readonly reason?: string,
  ) {
    super(message);
  }
}

/** 410 Gone: the resourceVersion (or continue token) is too old; the client must list again. */
export const isGone = (e: unknown): boolean => e instanceof KubeRequestError && e.status === 410;

/** Loads `kubeconfig` (undefined: the in-cluster service account); throws naming it when it cannot. */
export async function openKube(kubeconfig: string | undefined): Promise<Kube> {
  const what = kubeconfig !== undefined ? `kubeconfig ${kubeconfig}` : 'in-cluster service account';
  // Outside a pod the client would build the URL "https://undefined:undefined" and fail every
  // request with "Invalid URL", forever: say at start what is missing instead.
  if (kubeconfig === undefined && !(process.env.KUBERNETES_SERVICE_HOST && process.env.KUBERNETES_SERVICE_PORT)) {
    throw new Error(
      `${what}: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set (the agent is not running in a pod): give --kubeconfig FILE instead`,
    );
  }
  const k8s = await import('@kubernetes/client-node');
  const kc = new k8s.KubeConfig();
  try {
    if (kubeconfig !== undefined) kc.loadFromFile(kubeconfig);
    else kc.loadFromCluster();
  } catch (e) {
    throw new Error(`${what}: cannot load it: ${(e as Error).message.split('\n')[0]}`, { cause: e });
  }
  if (!kc.getCurrentCluster()) throw new Error(`${what}: no current cluster`);
  return { kc, coreApi: kc.makeApiClient(k8s.CoreV1Api), what };
}

/** One watch event as the API server streams it. */
export interface WatchEvent {
  readonly type: string;
  readonly object: unknown;
}

export interface WatchOptions {
  /** The answer's headers must arrive within this. */
  readonly headersTimeoutMs: number;
  /** The stream is ended by the client after this, whatever the server does (a dead connection ends too). */
  readonly maxMs: number;
  readonly signal?: AbortSignal;
}

/** What the pod cache needs of the API server (the real one: `kubeTransport`). */
export interface KubeTransport {
  /** GET `path` (with its query), JSON answer; KubeRequestError on a non-2xx answer or no answer within `timeoutMs`. */
  getJson(path: string, timeoutMs: number, signal?: AbortSignal): Promise<unknown>;
  /**
   * Streams `path` (a `watch=true` query), calling `onEvent` per event line; resolves when the
   * stream ends (by the server, or at `maxMs`), rejects on a failed answer, a broken stream,
   * or what `onEvent` throws (the stream is then cut).
   */
  watch(path: string, onEvent: (e: WatchEvent) => void, o: WatchOptions): Promise<void>;
}

export function kubeTransport(kube: Kube): KubeTransport {
  const open = async (path: string, signal: AbortSignal | undefined): Promise<http.ClientRequest> => {
    const cluster = kube.kc.getCurrentCluster();
    if (!cluster) throw new KubeRequestError(`${kube.what}: no current cluster`, undefined);
    const url = new URL(cluster.server.replace(/\/+$/, '') + path);
    const opts: https.RequestOptions = {};
    await kube.kc.applyToHTTPSOptions(opts);
    const headers = { ...(opts.headers as Record<string, string> | undefined), Accept: 'application/json' };
    const mod = url.protocol === 'https:' ? https : http;
    return mod.request(url, { ...opts, method: 'GET', headers, ...(signal ? { signal } : {}) });
  };
  const failure = (what: string, status: number, body: string): KubeRequestError => {
    let message = body.trim().slice(0, 300);
    let reason: string | undefined;
    try {
      const s = JSON.parse(body) as { message?: unknown; reason?: unknown };
      if (typeof s.message === 'string') message = s.message;
      if (typeof s.reason === 'string') reason = s.reason;
    } catch {
      // not a Status: the body's start is the message
    }
    return new KubeRequestError(`${what}: ${status}${reason ? ` ${reason}` : ''}: ${message}`, status, reason);
  };

  return {
    async getJson(path, timeoutMs, signal) {
      const what = `GET ${path.split('?')[0]}`;
      const req = await open(path, signal);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => req.destroy(new KubeRequestError(`${what}: no answer from the API server within ${timeoutMs} ms`, undefined)),
          timeoutMs,
        );
        timer.unref();
        req.on('error', (e) => {
          clearTimeout(timer);
          reject(e instanceof KubeRequestError ? e : new KubeRequestError(`${what}: ${e.message}`, undefined));
        });
        req.on('response', (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', () => undefined); // the request's error handler reports it
          res.on('end', () => {
            clearTimeout(timer);
            const body = Buffer.concat(chunks).toString('utf8');
            const code = res.statusCode ?? 0;
            if (code < 200 || code > 299) return reject(failure(what, code, body));
            try {
              resolve(JSON.parse(body));
            } catch {
              reject(new KubeRequestError(`${what}: the answer is not JSON`, code));
            }
          });
        });
        req.end();
      });
    },

    async watch(path, onEvent, o) {
      const what = `watch ${path.split('?')[0]}`;
      const req = await open(path, o.signal);
      return new Promise<void>((resolve, reject) => {
        let settled = false;
        const finish = (e?: Error): void => {
          if (settled) return;
          settled = true;
          clearTimeout(headersTimer);
          clearTimeout(maxTimer);
          req.destroy();
          if (e) reject(e);
          else resolve();
        };
        const headersTimer = setTimeout(
          () => finish(new KubeRequestError(`${what}: no answer from the API server within ${o.headersTimeoutMs} ms`, undefined)),
          o.headersTimeoutMs,
        );
        headersTimer.unref();
        const maxTimer = setTimeout(() => finish(), o.maxMs);
        maxTimer.unref();
        req.on('error', (e) => finish(e instanceof KubeRequestError ? e : new KubeRequestError(`${what}: ${e.message}`, undefined)));
        req.on('response', (res) => {
          clearTimeout(headersTimer);
          const code = res.statusCode ?? 0;
          if (code !== 200) {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () => finish(failure(what, code, Buffer.concat(chunks).toString('utf8'))));
            res.on('error', (e) => finish(new KubeRequestError(`${what}: ${e.message}`, undefined)));
            return;
          }
          res.setEncoding('utf8');
          let buf = '';
          res.on('data', (chunk: string) => {
            buf += chunk;
            let nl: number;
            while (!settled && (nl = buf.indexOf('\n')) >= 0) {
              const line = buf.slice(0, nl).trim();
              buf = buf.slice(nl + 1);
              if (line === '') continue;
              try {
                const e = JSON.parse(line) as WatchEvent;
                if (typeof e?.type !== 'string') throw new KubeRequestError(`${what}: an event without a type`, undefined);
                onEvent(e);
              } catch (err) {
                return finish(err instanceof KubeRequestError ? err : new KubeRequestError(`${what}: ${(err as Error).message}`, undefined));
              }
            }
          });
          res.on('end', () => finish());
          res.on('close', () => finish());
          res.on('error', (e) => finish(new KubeRequestError(`${what}: ${e.message}`, undefined)));
        });
        req.end();
      });
    },
  };
}
