/**
 * Checks that keep web pages out of a local API (what notebook servers and other local HTTP
 * tools do): the `Host` header must name this server (defeats DNS rebinding, where a page's
 * own host name is made to resolve to 127.0.0.1), a mutating call's `Origin`, when a browser
 * sends one, must be the server's own origin (defeats cross-site fetch/form posts), and a
 * request body must be `application/json` (a cross-site page can send text/plain without a
 * CORS preflight, never application/json).
 */
import { HttpError } from './http-error.js';

/** Which `Host` header values the server answers. */
export interface HostPolicy {
  /** Host names and addresses, as URL hostnames ("localhost", "127.0.0.1", "[::1]"). */
  readonly names: ReadonlySet<string>;
  /** Listening on a wildcard address: any IP literal is accepted (an IP cannot be rebound). */
  readonly anyAddress: boolean;
}

/** The URL hostname of a host name or address ("::1" → "[::1]"), lower case, no trailing dot. */
export function hostName(host: string): string {
  const h = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return new URL(`http://${h}/`).hostname.replace(/\.$/, '');
}

/**
 * The policy of a server listening on `listenHost`: localhost, 127.0.0.1, [::1], the listen
 * address itself and every name in `allowed` (`--allowed-host`). Throws a TypeError naming
 * a value of `allowed` that is not a host name or address.
 */
export function hostPolicy(listenHost: string, allowed: readonly string[] = []): HostPolicy {
  const names = new Set(['localhost', '127.0.0.1', '[::1]']);
  const wildcard = listenHost === '' || listenHost === '0.0.0.0' || listenHost === '::' || listenHost === '[::]';
  if (!wildcard) names.add(hostName(listenHost));
  for (const a of allowed) {
    let n: string;
    try {
      if (!/^(\[[0-9a-fA-F:.]+\]|[0-9a-fA-F:.]*:[0-9a-fA-F:.]*|[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?\.?)$/.test(a)) throw new Error();
      n = hostName(a);
    } catch {
      throw new TypeError(`invalid --allowed-host ${JSON.stringify(a)}: expected a host name or an IP address, without port (e.g. podipam.example.com)`);
    }
    names.add(n);
  }
  return { names, anyAddress: wildcard };
}

function isIpLiteral(hostname: string): boolean {
  return hostname.startsWith('[') || /^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$/.test(hostname);
}

/** Throws 421 unless the `Host` header names this server under `policy`. */
export function checkHost(host: string | undefined, policy: HostPolicy): void {
  if (host === undefined || host === '') throw new HttpError(421, 'host_not_allowed', 'the request has no Host header');
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:[\]/\\\s@?#%]+)(:[0-9]{1,5})?$/.exec(host);
  let name: string | undefined;
  try {
    name = m ? hostName(m[1] as string) : undefined;
  } catch {
    name = undefined;
  }
  if (name !== undefined && (policy.names.has(name) || (policy.anyAddress && isIpLiteral(name)))) return;
  const shown = host.length > 100 ? `${host.slice(0, 97)}...` : host;
  throw new HttpError(
    421,
    'host_not_allowed',
    `Host ${JSON.stringify(shown)} is not a name of this server (it answers to ${[...policy.names].join(', ')}${policy.anyAddress ? ' and any IP address' : ''}); ` +
      'to serve under another name, start it with --allowed-host NAME',
  );
}

/**
 * Throws 403 when a mutating request carries an `Origin` other than the server's own (http or
 * https on the same host and port as the `Host` header). Non-browser clients send no Origin.
 */
export function checkOrigin(origin: string | undefined, host: string): void {
  if (origin === undefined) return;
  let ok: boolean;
  try {
    const o = new URL(origin);
    ok = (o.protocol === 'http:' || o.protocol === 'https:') && o.host === new URL(`${o.protocol}//${host}/`).host;
  } catch {
    ok = false;
  }
  if (!ok) {
    const shown = origin.length > 100 ? `${origin.slice(0, 97)}...` : origin;
    throw new HttpError(
      403,
      'cross_origin',
      `cross-origin request refused: Origin ${JSON.stringify(shown)} is not this server (http://${host}); the API changes the datastore only for its own dashboard and non-browser clients`,
    );
  }
}

/** True when the request announces a body (Content-Length > 0 or a Transfer-Encoding). */
export function hasBody(headers: { readonly 'content-length'?: string; readonly 'transfer-encoding'?: string }): boolean {
  if (headers['transfer-encoding'] !== undefined) return true;
  const n = headers['content-length'];
  return n !== undefined && n.trim() !== '0';
}

/** Throws 415 unless `contentType` is application/json (parameters such as charset allowed). */
export function checkJsonType(contentType: string | undefined): void {
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json') {
    throw new HttpError(
      415,
      'unsupported_media_type',
      `request body must be sent as "content-type: application/json": got ${type === '' ? 'no content-type' : JSON.stringify(type)}`,
    );
  }
}
