import { StoreUrlError } from './errors.js';

/** What a datastore URL names, validated. */
export type StoreTarget =
  | { readonly kind: 'memory'; readonly name: string }
  | { readonly kind: 'sqlite'; readonly path: string }
  | { readonly kind: 'etcd'; readonly endpoints: readonly string[] };

/** etcd's default client port, for endpoints written without one. */
export const ETCD_DEFAULT_PORT = 2379;

const HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])$/;
const EXPECTED = 'expected memory:[NAME], sqlite:PATH or etcd://HOST:PORT[,HOST:PORT…]';

/**
 * Parses a datastore URL: `memory:` or `memory:NAME`; `sqlite:PATH` (absolute or relative
 * to the working directory; `sqlite:///abs/path` also works); `etcd://HOST[:PORT][,…]` with
 * hosts as names, IPv4 or bracketed IPv6 and the port defaulting to 2379. Throws
 * StoreUrlError naming the URL and what is wrong.
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
      return { kind: 'etcd', endpoints: etcdEndpoints(url, rest) };
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

function etcdEndpoints(url: string, rest: string): string[] {
  if (!rest.startsWith('//')) throw new StoreUrlError(url, 'an etcd URL is etcd://HOST:PORT[,HOST:PORT…]');
  const list = rest.slice(2).replace(/\/$/, '');
  if (list === '') throw new StoreUrlError(url, 'no etcd endpoint given');
  return list.split(',').map((endpoint) => {
    const m = /^(.*?)(?::(\d+))?$/.exec(endpoint) as RegExpExecArray;
    const host = m[1] as string;
    if (!HOST.test(host)) {
      throw new StoreUrlError(url, `endpoint "${endpoint}" is not HOST[:PORT] (a name, IPv4, or [IPv6]; no user, path or query)`);
    }
    const port = m[2] === undefined ? ETCD_DEFAULT_PORT : Number(m[2]);
    if (!(port >= 1 && port <= 65535)) throw new StoreUrlError(url, `endpoint "${endpoint}" has port ${m[2]}, outside 1-65535`);
    return `${host}:${port}`;
  });
}
