import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { checkKey, checkKeys, checkListOptions, checkPrefix, checkTxn, checkWatch, MAX_TXN_OPS } from '../check-input.js';
import { StoreError } from '../errors.js';
import { compareKeys } from '../key-order.js';
import type { EtcdCredentials, EtcdTlsParams } from '../parse-store-url.js';
import { redactStoreUrl } from '../redact-store-url.js';
import type { Compare, Entry, ListOptions, Op, Store, TxnResult, WatchEvent, WatchOptions } from '../store.js';
import { resolveTimeoutMs, type StoreOptions } from '../store-options.js';
import { decodeKv, prefixRangeEnd, rootedBytes, wireInt, type WireKv } from './etcd-codec.js';
import { resolveEtcdAccess, type EtcdAccess } from './etcd-access.js';
import { EtcdGateway } from './etcd-gateway.js';
import { saveEtcdSnapshot } from './etcd-snapshot.js';
import { LIST_PAGE } from '../list-all.js';
import { EtcdWatch } from './etcd-watch.js';
import type { HttpTransport } from './http-post.js';
import type { GrpcSessions } from './grpc-sessions.js';

interface WireHeader {
  readonly header?: { readonly revision?: string; readonly cluster_id?: string };
}
interface WireRange extends WireHeader {
  readonly kvs?: readonly WireKv[];
}
interface WireTxn extends WireHeader {
  readonly succeeded?: boolean;
  readonly responses?: readonly { readonly response_range?: WireRange }[];
}

/** Where an etcd store is: `etcd://` (plain HTTP) or `etcds://` (HTTPS, `tls` present). */
export interface EtcdTarget {
  readonly endpoints: readonly string[];
  readonly tls?: EtcdTlsParams;
  readonly credentials?: EtcdCredentials;
}

/**
 * A store in etcd v3 (3.4 or later), under the key prefix `/podipam/`, spoken to in gRPC over
 * node:http2 (watches as gRPC streams on the same connection; etcd snapshots through etcd's JSON
 * gateway with node:http or node:https; TLS with a CA, a client certificate, a server name; user and password auth, see
 * EtcdGateway) — no gRPC library to load, which keeps the CNI plugin's start fast. One request
 * per get, list or txn; a failed txn's `current`
 * comes from range requests in the txn's failure branch, in the same request. Opening makes
 * no request. Endpoint failover and timeouts are EtcdGateway's: a call fails with
 * StoreUnavailableError after at most `endpoints × timeoutMs`, and a txn that timed out may
 * or may not have been applied (the caller re-reads before retrying).
 */
export class EtcdStore implements Store {
  readonly url: string;
  readonly #gateway: EtcdGateway;
  readonly #watches = new Set<EtcdWatch>();
  #closed = false;

  private constructor(url: string, gateway: EtcdGateway) {
    this.url = url;
    this.#gateway = gateway;
  }

  /**
   * A store on the cluster whose members answer at `target.endpoints` (`host:port`), with the
   * TLS settings and credentials of the URL, completed from PODIPAM_ETCD_* in `options.env`
   * (default process.env). Reads the certificate files; makes no request. Rejects with
   * StoreUrlError for bad settings (see resolveEtcdAccess). `url` is kept, password hidden,
   * for messages.
   */
  static async open(url: string, target: EtcdTarget, options?: StoreOptions): Promise<EtcdStore> {
    const shown = redactStoreUrl(url);
    if (target.endpoints.length === 0) throw new TypeError(`Cannot open ${shown} as 'endpoints' must not be empty`);
    const timeoutMs = resolveTimeoutMs(options);
    const access = await resolveEtcdAccess(url, target.tls, target.credentials, options?.env ?? process.env);
    const transport = await transportFor(access);
    return new EtcdStore(shown, new EtcdGateway(shown, target.endpoints, timeoutMs, transport, await grpcFor(transport, options), access.credentials));
  }

  get roundTrips(): number {
    return this.#gateway.roundTrips;
  }

  async get(key: string): Promise<Entry | undefined> {
    checkKey(key);
    const res = (await this.#call('kv/range', { key: rootedBytes(key).toString('base64') }, 'read')) as WireRange;
    const kv = res.kvs?.[0];
    return kv === undefined ? undefined : decodeKv(this.url, kv);
  }

  /**
   * One kv/txn of range requests per MAX_TXN_OPS keys (no compares, no writes: etcd serves
   * it as a read). Later chunks read at the first one's revision, so all is one snapshot.
   */
  async getMany(keys: readonly string[]): Promise<(Entry | undefined)[]> {
    checkKeys(keys);
    this.#checkOpen();
    const out: (Entry | undefined)[] = [];
    let rev: string | undefined;
    for (let i = 0; i < keys.length; i += MAX_TXN_OPS) {
      const chunk = keys.slice(i, i + MAX_TXN_OPS);
      const success = chunk.map((key) => ({ request_range: { key: rootedBytes(key).toString('base64'), ...(rev === undefined ? {} : { revision: rev }) } }));
      const res = (await this.#call('kv/txn', { success }, 'read')) as WireTxn;
      rev ??= res.header?.revision;
      const responses = res.responses ?? [];
      if (responses.length !== chunk.length) {
        throw new StoreError(this.url, `etcd answered a read of ${chunk.length} keys with ${responses.length} ranges`);
      }
      for (const r of responses) {
        const kv = r.response_range?.kvs?.[0];
        out.push(kv === undefined ? undefined : decodeKv(this.url, kv));
      }
    }
    return out;
  }

  async revision(): Promise<number> {
    // A count of one key podipam never writes (keys are non-empty): only the header matters.
    const res = (await this.#call('kv/range', { key: rootedBytes('').toString('base64'), count_only: true }, 'read')) as WireRange;
    return wireInt(this.url, 'header.revision', res.header?.revision);
  }

  /** `etcd cluster CLUSTER_ID`, from the header of a read (any member answers with its cluster's). */
  async identity(): Promise<string> {
    const res = (await this.#call('kv/range', { key: rootedBytes('').toString('base64'), count_only: true }, 'read')) as WireRange;
    const id = res.header?.cluster_id;
    if (typeof id !== 'string' || !/^\d+$/.test(id))
      throw new StoreError(this.url, `etcd answered a read without a cluster id in its header (header.cluster_id: ${JSON.stringify(id)})`);
    return `etcd cluster ${BigInt(id).toString(16)}`;
  }

  /** A gRPC watch stream (`/etcdserverpb.Watch/Watch`), starting at the member calls prefer; see EtcdWatch. */
  watch(prefix: string, fromRevision: number, options?: WatchOptions): AsyncIterable<WatchEvent[]> & { readonly endpoint: string | undefined } {
    checkWatch(prefix, fromRevision);
    this.#checkOpen();
    const w: EtcdWatch = new EtcdWatch(this.url, this.#gateway, prefix, fromRevision, this.#gateway.preferred, options?.signal, () => this.#watches.delete(w));
    if (!w.feed.done) this.#watches.add(w);
    const feed = w.feed;
    return {
      [Symbol.asyncIterator]: () => feed[Symbol.asyncIterator](),
      get endpoint() {
        return w.endpoint;
      },
    };
  }

  async list(prefix: string, options?: ListOptions): Promise<Entry[]> {
    checkPrefix(prefix);
    checkListOptions(options);
    this.#checkOpen();
    if (options?.limit === 0) return []; // etcd reads limit 0 as "no limit"
    const after = options?.after;
    const strict = after !== undefined && compareKeys(after, prefix) >= 0;
    // The first key after `after` is `after` followed by a NUL byte.
    const from = strict ? Buffer.concat([rootedBytes(after), Buffer.of(0)]) : rootedBytes(prefix);
    const end = prefixRangeEnd(rootedBytes(prefix));
    if (Buffer.compare(from, end) >= 0) return [];
    const body: Record<string, unknown> = { key: from.toString('base64'), range_end: end.toString('base64') };
    if (options?.limit !== undefined) body['limit'] = String(options.limit);
    const res = (await this.#call('kv/range', body, 'read')) as WireRange;
    return (res.kvs ?? []).map((kv) => decodeKv(this.url, kv));
  }

  /** Pages of LIST_PAGE, the first at the current revision and every later one at that same revision. */
  async snapshot(prefix: string): Promise<{ rev: number; entries: Entry[] }> {
    checkPrefix(prefix);
    const end = prefixRangeEnd(rootedBytes(prefix)).toString('base64');
    const entries: Entry[] = [];
    let from = rootedBytes(prefix);
    let rev: string | undefined;
    // Bounded by the number of entries: every page but the last is full and moves `from` on.
    for (;;) {
      const body = { key: from.toString('base64'), range_end: end, limit: String(LIST_PAGE), ...(rev === undefined ? {} : { revision: rev }) };
      const res = (await this.#call('kv/range', body, 'read')) as WireRange & { more?: boolean };
      rev ??= res.header?.revision;
      const kvs = res.kvs ?? [];
      for (const kv of kvs) entries.push(decodeKv(this.url, kv));
      const last = kvs[kvs.length - 1];
      if (kvs.length < LIST_PAGE || last === undefined || res.more !== true) break;
      from = Buffer.concat([Buffer.from(last.key ?? '', 'base64'), Buffer.of(0)]);
    }
    return { rev: wireInt(this.url, 'header.revision', rev), entries };
  }

  /**
   * etcd's own snapshot of the member calls prefer (Maintenance Snapshot through the JSON
   * gateway), written to `file` as `etcdctl snapshot save` writes it (the database and its
   * SHA-256), for `etcdutl snapshot restore`. See saveEtcdSnapshot.
   */
  async saveSnapshot(file: string): Promise<{ readonly bytes: number; readonly endpoint: string }> {
    this.#checkOpen();
    return saveEtcdSnapshot(this.url, this.#gateway, file);
  }

  async txn(compares: readonly Compare[], ops: readonly Op[]): Promise<TxnResult> {
    checkTxn(compares, ops);
    const keys = compares.map((c) => rootedBytes(c.key).toString('base64'));
    const body = {
      // MOD == 0 holds exactly for an absent key: etcd compares a missing key as a zero KeyValue.
      compare: compares.map((c, i) => ({ key: keys[i], target: 'MOD', result: 'EQUAL', mod_revision: String(c.rev) })),
      success: ops.map((op) => {
        const key = rootedBytes(op.key).toString('base64');
        return op.type === 'put' ? { request_put: { key, value: Buffer.from(op.value, 'utf8').toString('base64') } } : { request_delete_range: { key } };
      }),
      failure: keys.map((key) => ({ request_range: { key } })),
    };
    const res = (await this.#call('kv/txn', body, ops.length === 0 ? 'read' : 'write')) as WireTxn;
    const rev = wireInt(this.url, 'header.revision', res.header?.revision);
    if (res.succeeded === true) return { succeeded: true, rev };
    const responses = res.responses ?? [];
    if (responses.length !== compares.length) {
      throw new StoreError(this.url, `etcd answered a failed txn with ${responses.length} ranges for ${compares.length} compares`);
    }
    const current = responses.map((r) => {
      const kv = r.response_range?.kvs?.[0];
      return kv === undefined ? undefined : decodeKv(this.url, kv);
    });
    return { succeeded: false, rev, current };
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const w of [...this.#watches]) w.feed.end();
    this.#gateway.close();
  }

  async #call(path: string, body: unknown, kind: 'read' | 'write'): Promise<unknown> {
    this.#checkOpen();
    const res = await this.#gateway.call(path, body, kind);
    if (res === null || typeof res !== 'object') {
      throw new StoreError(this.url, `etcd answered ${path} with ${JSON.stringify(res)}`);
    }
    return res;
  }

  #checkOpen(): void {
    if (this.#closed) throw new StoreError(this.url, 'the store is closed');
  }
}

/** gRPC sessions with the transport's TLS material (node:http2 loaded only then); none for a one-shot process. */
export async function grpcFor(transport: HttpTransport, options: StoreOptions | undefined): Promise<GrpcSessions | undefined> {
  if (options?.oneShot === true) return undefined;
  const { GrpcSessions } = await import('./grpc-sessions.js');
  return new GrpcSessions(transport.secure ? (transport.tls ?? {}) : undefined);
}

/** node:http, or node:https (loaded only then) with the TLS material in its agent. */
export async function transportFor(access: EtcdAccess): Promise<HttpTransport> {
  const tls = access.tls;
  if (tls === undefined) return { request: httpRequest, agent: new HttpAgent({ keepAlive: true }), secure: false };
  const https = await import('node:https');
  const agent = new https.Agent({
    keepAlive: true,
    ...(tls.ca ? { ca: tls.ca } : {}),
    ...(tls.cert ? { cert: tls.cert } : {}),
    ...(tls.key ? { key: tls.key } : {}),
  });
  const material = { ca: tls.ca, cert: tls.cert, key: tls.key, servername: tls.servername };
  return { request: https.request, agent, secure: true, tls: material, ...(tls.servername ? { servername: tls.servername } : {}) };
}
