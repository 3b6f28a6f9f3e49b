/**
 * A datastore URL fit to print: the password of `etcd://USER:PASSWORD@…` (or `etcds://`)
 * becomes `***` (found as parseStoreUrl finds it, so also in a URL it refuses). Other URLs
 * are unchanged.
 */
export function redactStoreUrl(url: string): string {
  const m = /^(etcds?:\/\/)(.*)$/is.exec(url);
  if (m === null) return url;
  const { userinfo } = splitEtcdAuthority(m[2] as string);
  if (userinfo === undefined) return url;
  const colon = userinfo.indexOf(':');
  const user = colon < 0 ? userinfo : `${userinfo.slice(0, colon)}:***`;
  const tail = (m[2] as string).slice((m[2] as string).lastIndexOf('@') + 1);
  return `${m[1]}${user}@${tail}`;
}

/**
 * The parts of what follows `etcd://`: `[USERINFO@]HOSTS[?QUERY]`. The userinfo ends at the
 * last `@` of the whole text, so a password may hold unencoded `@`, `/`, `?` or `#` (an `@`
 * in a query value must be written %40); the query starts at the first `?` after it.
 */
export function splitEtcdAuthority(authority: string): { userinfo?: string; hosts: string; query: string } {
  const at = authority.lastIndexOf('@');
  const userinfo = at < 0 ? undefined : authority.slice(0, at);
  const tail = authority.slice(at + 1);
  const q = tail.indexOf('?');
  const hosts = q < 0 ? tail : tail.slice(0, q);
  const query = q < 0 ? '' : tail.slice(q + 1);
  return userinfo === undefined ? { hosts, query } : { userinfo, hosts, query };
}
