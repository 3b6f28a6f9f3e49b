import { StoreUrlError } from './errors.js';
import { splitEtcdAuthority } from './redact-store-url.js';

/** TLS settings an `etcds://` URL's query gives (file paths, not contents). */
export interface EtcdTlsParams {
  /** CA certificate(s) to verify the members with (PEM); default: Node's built-in CAs. */
  readonly ca?: string;
  /** Client certificate (PEM), for members run with --client-cert-auth; needs `key`. */
  readonly cert?: string;
  /** The client certificate's private key (PEM, unencrypted). */
  readonly key?: string;
  /** Name to send (SNI) and to verify the members' certificates against, instead of the host. */
  readonly servername?: string;
}

/** etcd user and password, from `etcd://USER:PASSWORD@…` (percent-decoded). */
export interface EtcdCredentials {
  readonly username: string;
  readonly password: string;
}

/** What a datastore URL names, validated. */
export type StoreTarget =
  | { readonly kind: 'memory'; readonly name: string }
  | { readonly kind: 'sqlite'; readonly path: string }
  | {
      readonly kind: 'etcd';
      readonly endpoints: readonly string[];
      /** Present (maybe empty) for `etcds://`: HTTPS. Absent for `etcd://`: plain HTTP. */
      readonly tls?: EtcdTlsParams;
      readonly credentials?: EtcdCredentials;
    };

/** etcd's default client port, for endpoints written without one. */
export const ETCD_DEFAULT_PORT = 2379;

const HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])$/;
const EXPECTED = 'expected memory:[NAME], sqlite:PATH, etcd://HOST:PORT[,HOST:PORT…] or etcds://HOST:PORT[,…][?ca=FILE&cert=FILE&key=FILE&servername=NAME]';
const TLS_PARAMS = ['ca', 'cert', 'key', 'servername'] as const;

/**
 * Parses a datastore URL: `memory:` or `memory:NAME`; `sqlite:PATH` (absolute or relative
 * to the working directory; `sqlite:///abs/path` also works); `etcd://HOST[:PORT][,…]` with
 * hosts as names, IPv4 or bracketed IPv6 and the port defaulting to 2379, or `etcds://…`
 * for HTTPS with the query parameters of EtcdTlsParams; either may start with
 * `USER:PASSWORD@` (percent-encoded). Throws StoreUrlError naming the URL (password hidden)
 * and what is wrong.
 */
export function parseStoreUrl(url: string): StoreTarget {
  if (typeof url !== 'string') throw new StoreUrlError(String(url), `not a string; ${EXPECTED}`);
  const colon = url.indexOf(':');
  const scheme = colon < 0 ? '' : url.slice(0, colon).toLowerCase();
  const rest = url.slice(colon + 1);
  switch (scheme) {
    case 'memory':
      return { kind: 'memory', name: rest };
    case 'sqlite':
      return { kind: 'sqlite', path: sqlitePath(url, rest) };
    case 'etcd':
    case 'etcds':
      return etcdTarget(url, rest, scheme === 'etcds');
    default:
      throw new StoreUrlError(url, colon < 0 ? `no scheme; ${EXPECTED}` : `unknown scheme "${url.slice(0, colon)}"; ${EXPECTED}`);
  }
}

function sqlitePath(url: string, rest: string): string {
  let path = rest;
  if (rest.startsWith('//')) {
    // sqlite:///abs/path: an empty authority, as in file: URLs
    if (!rest.startsWith('///')) throw new StoreUrlError(url, 'a sqlite URL names a file, not a host: use sqlite:/abs/path.db or sqlite:relative.db');
    path = rest.slice(2);
  }
  if (path === '') throw new StoreUrlError(url, 'the sqlite file path is empty; e.g. sqlite:/var/lib/podipam/podipam.db');
  if (path.includes('\0')) throw new StoreUrlError(url, 'the sqlite file path contains a NUL character');
  return path;
}

function etcdTarget(url: string, rest: string, secure: boolean): StoreTarget {
  const scheme = secure ? 'etcds' : 'etcd';
  if (!rest.startsWith('//')) throw new StoreUrlError(url, `an etcd URL is ${scheme}://HOST:PORT[,HOST:PORT…]`);
  const { userinfo, hosts, query } = splitEtcdAuthority(rest.slice(2));
  const endpoints = etcdEndpoints(url, hosts.replace(/\/$/, ''));
  const target: { kind: 'etcd'; endpoints: string[]; tls?: EtcdTlsParams; credentials?: EtcdCredentials } = { kind: 'etcd', endpoints };
  if (userinfo !== undefined) target.credentials = credentials(url, userinfo);
  const tls = tlsParams(url, query);
  if (secure) target.tls = tls;
  else if (Object.keys(tls).length > 0) {
    throw new StoreUrlError(url, `${Object.keys(tls).join(', ')} given, but etcd:// is plain HTTP: write etcds:// for TLS`);
  }
  return target;
}

function credentials(url: string, userinfo: string): EtcdCredentials {
  const colon = userinfo.indexOf(':');
  if (colon < 0) throw new StoreUrlError(url, `user "${userinfo}" without a password: write USER:PASSWORD@ (percent-encoded)`);
  const decode = (field: string, text: string): string => {
    try {
      return decodeURIComponent(text);
    } catch {
      // never echo the password, even a malformed one
      throw new StoreUrlError(url, `the ${field} is not valid percent-encoding`);
    }
  };
  const username = decode('user name', userinfo.slice(0, colon));
  const password = decode('password', userinfo.slice(colon + 1));
  if (username === '') throw new StoreUrlError(url, 'the user name before ":" is empty');
  if (password === '') throw new StoreUrlError(url, `user "${username}" has an empty password`);
  return { username, password };
}

function tlsParams(url: string, query: string): EtcdTlsParams {
  const out: Record<string, string> = {};
  for (const [name, value] of new URLSearchParams(query)) {
    if (!(TLS_PARAMS as readonly string[]).includes(name)) {
      throw new StoreUrlError(url, `unknown query parameter "${name}"; known: ${TLS_PARAMS.join(', ')}`);
    }
    if (name in out) throw new StoreUrlError(url, `query parameter "${name}" given twice`);
    if (value === '') throw new StoreUrlError(url, `query parameter "${name}" is empty`);
    out[name] = value;
  }
  return out;
}

function etcdEndpoints(url: string, list: string): string[] {
  if (list === '') throw new StoreUrlError(url, 'no etcd endpoint given');
  return list.split(',').map((endpoint) => {
    const m = /^(.*?)(?::(\d+))?$/.exec(endpoint) as RegExpExecArray;
    const host = m[1] as string;
    if (!HOST.test(host)) {
      throw new StoreUrlError(url, `endpoint "${endpoint}" is not HOST[:PORT] (a name, IPv4, or [IPv6]; no path)`);
    }
    const port = m[2] === undefined ? ETCD_DEFAULT_PORT : Number(m[2]);
    if (!(port >= 1 && port <= 65535)) throw new StoreUrlError(url, `endpoint "${endpoint}" has port ${m[2]}, outside 1-65535`);
    return `${host}:${port}`;
  });
}
