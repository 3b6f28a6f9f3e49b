import { readFileSync } from 'node:fs';
import { StoreUrlError } from '../errors.js';
import type { EtcdCredentials, EtcdTlsParams } from '../parse-store-url.js';

/** Environment variables that give what the URL leaves out (the URL wins, field by field). */
export const ETCD_ENV = {
  ca: 'PODIPAM_ETCD_CA',
  cert: 'PODIPAM_ETCD_CERT',
  key: 'PODIPAM_ETCD_KEY',
  servername: 'PODIPAM_ETCD_SERVERNAME',
  username: 'PODIPAM_ETCD_USERNAME',
  password: 'PODIPAM_ETCD_PASSWORD',
} as const;

/** How to reach the members: TLS material (read from its files) and credentials. */
export interface EtcdAccess {
  /** Present for HTTPS. */
  readonly tls?: {
    readonly ca?: Buffer;
    readonly cert?: Buffer;
    readonly key?: Buffer;
    readonly servername?: string;
  };
  readonly credentials?: EtcdCredentials;
}

type Env = Readonly<Record<string, string | undefined>>;

/**
 * Merges an etcd URL's TLS parameters and credentials with ETCD_ENV from `env` and reads the
 * certificate files. Rejects with StoreUrlError naming the setting (query parameter or
 * variable) and its value, never a password: a file that cannot be read or is not PEM, a
 * certificate without its key or the reverse or not matching it, TLS settings for a plain
 * etcd:// URL, a user without a password.
 */
export async function resolveEtcdAccess(url: string, tls: EtcdTlsParams | undefined, credentials: EtcdCredentials | undefined, env: Env): Promise<EtcdAccess> {
  const given = (name: keyof typeof ETCD_ENV): string | undefined => {
    const v = env[ETCD_ENV[name]];
    return v === undefined || v === '' ? undefined : v;
  };
  // Where each setting came from, for messages.
  const from = (name: keyof EtcdTlsParams): string => (tls?.[name] !== undefined ? `${name}=${tls[name]}` : `${ETCD_ENV[name]}=${given(name)}`);
  const pick = (name: keyof EtcdTlsParams): string | undefined => tls?.[name] ?? given(name);

  const names = ['ca', 'cert', 'key', 'servername'] as const;
  const out: { tls?: EtcdAccess['tls']; credentials?: EtcdCredentials } = {};
  if (tls === undefined) {
    const set = names.filter((n) => given(n) !== undefined);
    if (set.length > 0) {
      throw new StoreUrlError(url, `${set.map((n) => ETCD_ENV[n]).join(', ')} set, but etcd:// is plain HTTP: write etcds:// for TLS`);
    }
  } else {
    const cert = pick('cert');
    const key = pick('key');
    if ((cert === undefined) !== (key === undefined)) {
      throw new StoreUrlError(
        url,
        cert === undefined ? `${from('key')} given without cert (the client certificate)` : `${from('cert')} given without key (its private key)`,
      );
    }
    const read = (name: 'ca' | 'cert' | 'key'): Buffer | undefined => {
      const path = pick(name);
      if (path === undefined) return undefined;
      try {
        return readFileSync(path);
      } catch (e) {
        throw new StoreUrlError(url, `${from(name)}: cannot read the file (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`, {
          cause: e,
        });
      }
    };
    const servername = pick('servername');
    const ca = read('ca');
    const certPem = read('cert');
    const keyPem = read('key');
    // Node would find bad PEM only at the first connection (a bad CA not even then), in
    // words that name no file.
    const [{ X509Certificate, createPrivateKey }, { createSecureContext }] = await Promise.all([import('node:crypto'), import('node:tls')]);
    const check = (what: string, parse: () => unknown): void => {
      try {
        parse();
      } catch (e) {
        throw new StoreUrlError(url, `${what} (${(e as Error).message})`, { cause: e });
      }
    };
    if (ca) check(`${from('ca')} is not a PEM certificate`, () => new X509Certificate(ca));
    if (certPem && keyPem) {
      check(`${from('cert')} is not a PEM certificate`, () => new X509Certificate(certPem));
      check(`${from('key')} is not a PEM private key`, () => createPrivateKey(keyPem));
      check(`${from('cert')} and ${from('key')} do not match`, () => createSecureContext({ cert: certPem, key: keyPem }));
    }
    out.tls = {
      ...(ca ? { ca } : {}),
      ...(certPem ? { cert: certPem } : {}),
      ...(keyPem ? { key: keyPem } : {}),
      ...(servername ? { servername } : {}),
    };
  }

  if (credentials !== undefined) {
    out.credentials = credentials;
  } else {
    const username = given('username');
    const password = given('password');
    if (username !== undefined && password === undefined) throw new StoreUrlError(url, `${ETCD_ENV.username}=${username} set without ${ETCD_ENV.password}`);
    if (username === undefined && password !== undefined) throw new StoreUrlError(url, `${ETCD_ENV.password} set without ${ETCD_ENV.username}`);
    if (username !== undefined && password !== undefined) out.credentials = { username, password };
  }
  return out;
}
