/**
 * Read-only access to any part of an etcd v3 key space, outside podipam's own `/podipam/`
 * root: what `podipam import calico --from-etcd` reads Calico's `/calico/…` keys with. The
 * same gateway, endpoints, TLS and credentials as EtcdStore (an `etcd://` or `etcds://` URL,
 * completed from PODIPAM_ETCD_*), and nothing but range reads: it cannot write.
 */
import { StoreUrlError } from '../errors.js';
import { parseStoreUrl } from '../parse-store-url.js';
import { redactStoreUrl } from '../redact-store-url.js';
import { resolveTimeoutMs, type StoreOptions } from '../store-options.js';
import { prefixRangeEnd, type WireKv } from './etcd-codec.js';
import { resolveEtcdAccess } from './etcd-access.js';
import { EtcdGateway } from './etcd-gateway.js';
import { transportFor, grpcFor } from './etcd-store.js';

/** Keys per range request when listing a prefix. */
export const RAW_PAGE = 1000;

/** One key and its value, both as UTF-8 text, the key absolute (e.g. `/calico/ipam/v2/handle/…`). */
export interface RawKv {
  readonly key: string;
  readonly value: string;
}

export class EtcdRawReader {
  readonly url: string;
  readonly #gateway: EtcdGateway;

  private constructor(url: string, gateway: EtcdGateway) {
    this.url = url;
    this.#gateway = gateway;
  }

  /** A reader of the cluster an `etcd://` / `etcds://` URL names; StoreUrlError for any other URL. Makes no request. */
  static async open(url: string, options?: StoreOptions): Promise<EtcdRawReader> {
    const target = parseStoreUrl(url);
    const shown = redactStoreUrl(url);
    if (target.kind !== 'etcd') throw new StoreUrlError(shown, 'not an etcd URL: write etcd://HOST:PORT[,…] or etcds://…');
    const timeoutMs = resolveTimeoutMs(options);
    const access = await resolveEtcdAccess(url, target.tls, target.credentials, options?.env ?? process.env);
    const transport = await transportFor(access);
    return new EtcdRawReader(shown, new EtcdGateway(shown, target.endpoints, timeoutMs, transport, await grpcFor(transport, options), access.credentials));
  }

  /** Every key starting with `prefix` and its value, in key order, paged, each page at the first page's revision (one snapshot). */
  async list(prefix: string): Promise<RawKv[]> {
    const start = Buffer.from(prefix, 'utf8');
    const end = prefixRangeEnd(start);
    const out: RawKv[] = [];
    let from = start;
    let revision: string | undefined;
    for (;;) {
      const body: Record<string, unknown> = { key: from.toString('base64'), range_end: end.toString('base64'), limit: String(RAW_PAGE) };
      if (revision !== undefined) body.revision = revision;
      const res = (await this.#gateway.call('kv/range', body, 'read')) as { header?: { revision?: string }; kvs?: readonly WireKv[]; more?: boolean } | null;
      revision ??= res?.header?.revision;
      const kvs = res?.kvs ?? [];
      for (const kv of kvs)
        out.push({ key: Buffer.from(kv.key ?? '', 'base64').toString('utf8'), value: Buffer.from(kv.value ?? '', 'base64').toString('utf8') });
      const last = kvs[kvs.length - 1];
      if (res?.more !== true || last === undefined) return out;
      from = Buffer.concat([Buffer.from(last.key ?? '', 'base64'), Buffer.of(0)]);
    }
  }

  close(): void {
    this.#gateway.close();
  }
}
