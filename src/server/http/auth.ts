/**
 * Bearer-token access to the API. Two tokens: a read-only one for GETs and an admin one for
 * everything (the admin token also reads). On a loopback address with no tokens configured,
 * reads are open and mutating calls need the per-install token (see install-token.ts); any
 * other listen address refuses to start without both tokens, because an open mutating API on
 * a network is a way to steal every pod's address.
 */
import { timingSafeEqual } from 'node:crypto';
import { HttpError } from './http-error.js';
import { readSecretFile } from './secret-file.js';

export interface Tokens {
  readonly read?: string;
  readonly admin?: string;
  /**
   * Loopback without read/admin tokens: the per-install token. It grants admin; a caller
   * without a bearer token may read. Ignored when `read` or `admin` is set.
   */
  readonly install?: string;
}

export type Role = 'none' | 'read' | 'admin';

/** True for 127.0.0.0/8, ::1 and "localhost". */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d+\.\d+\.\d+$/.test(h) || h === '::ffff:127.0.0.1';
}

/**
 * Reads tokens from a file of `read=TOKEN` / `admin=TOKEN` lines (`#` comments allowed),
 * overridden by the environment ($PODIPAM_READ_TOKEN, $PODIPAM_ADMIN_TOKEN).
 */
export function loadTokens(tokenFile: string | undefined, env: NodeJS.ProcessEnv = process.env): Tokens {
  let read: string | undefined;
  let admin: string | undefined;
  if (tokenFile !== undefined) {
    const text = readSecretFile('--token-file', tokenFile);
    text.split(/\r?\n/).forEach((raw, i) => {
      const line = raw.trim();
      if (line === '' || line.startsWith('#')) return;
      const m = /^(read|admin)\s*=\s*(\S+)$/.exec(line);
      // The line is not shown: it may be a token with a typo in its key.
      if (!m)
        throw new Error(
          `--token-file ${tokenFile} line ${i + 1}: expected "read=TOKEN" or "admin=TOKEN" (the line, ${line.length} characters, is not shown as it may hold a secret)`,
        );
      if (m[1] === 'read') read = m[2];
      else admin = m[2];
    });
  }
  read = env.PODIPAM_READ_TOKEN || read;
  admin = env.PODIPAM_ADMIN_TOKEN || admin;
  for (const [what, t] of [
    ['read', read],
    ['admin', admin],
  ] as const) {
    if (t !== undefined && t.length < 16) throw new Error(`the ${what} token must be at least 16 characters: got ${t.length}`);
  }
  if (read !== undefined && read === admin) throw new Error('the read token and the admin token must differ');
  return { read, admin };
}

/** Throws when `host` is not loopback and the tokens needed to protect it are missing. */
export function checkListenTokens(host: string, tokens: Tokens): void {
  if (isLoopbackHost(host)) return;
  if (tokens.admin === undefined || tokens.read === undefined) {
    throw new Error(
      `refusing to listen on ${host}, which is not a loopback address, without API tokens: ` +
        'give --token-file FILE (lines "read=TOKEN" and "admin=TOKEN") or set PODIPAM_READ_TOKEN and PODIPAM_ADMIN_TOKEN',
    );
  }
}

/** True when any token is configured, i.e. requests must authenticate. */
export function authRequired(tokens: Tokens): boolean {
  return tokens.read !== undefined || tokens.admin !== undefined;
}

/**
 * The role an `Authorization` header grants. With only the install token, no header reads and
 * the install token is admin; with no tokens at all (a library caller) every caller is admin.
 */
export function roleOf(authorization: string | undefined, tokens: Tokens): Role {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
  if (!authRequired(tokens)) {
    if (tokens.install === undefined) return 'admin';
    if (authorization === undefined || authorization === '') return 'read';
    return m && same(m[1] as string, tokens.install) ? 'admin' : 'none';
  }
  if (!m) return 'none';
  const given = m[1] as string;
  if (tokens.admin !== undefined && same(given, tokens.admin)) return 'admin';
  if (tokens.read !== undefined && same(given, tokens.read)) return 'read';
  return 'none';
}

/** Throws 401/403 unless `role` may make a call that `mutates` (or only reads). */
export function authorize(role: Role, mutates: boolean, tokens: Tokens = {}): void {
  if (role === 'none') throw new HttpError(401, 'unauthorized', 'missing or unknown bearer token: send "Authorization: Bearer TOKEN"');
  if (mutates && role !== 'admin') {
    if (!authRequired(tokens) && tokens.install !== undefined) {
      throw new HttpError(
        401,
        'unauthorized',
        'this call changes the datastore and needs the install token: send "Authorization: Bearer TOKEN" with the token printed by podipam serve (in its data directory, file serve.token)',
      );
    }
    throw new HttpError(403, 'forbidden', 'this call changes the datastore and needs the admin token; the read-only token was given');
  }
}

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
