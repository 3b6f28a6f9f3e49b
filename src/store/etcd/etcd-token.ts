import { StoreError } from '../errors.js';
import type { EtcdCredentials } from '../parse-store-url.js';
import { EtcdRefusal } from './etcd-refusal.js';

/**
 * The etcd auth token of one user, shared by every call of a store: fetched on first use
 * (etcd `auth/authenticate`), fetched again when etcd refuses it. Concurrent callers wait for
 * one authentication. A cluster without authentication enabled needs no token (undefined),
 * so credentials can be configured before auth is turned on.
 */
export class EtcdToken {
  readonly #url: string;
  readonly #credentials: EtcdCredentials;
  readonly #authenticate: (body: { name: string; password: string }) => Promise<unknown>;
  #current: Promise<string | undefined> | undefined;

  /** `authenticate` POSTs to `auth/authenticate` and resolves with the parsed answer. */
  constructor(url: string, credentials: EtcdCredentials, authenticate: (body: { name: string; password: string }) => Promise<unknown>) {
    this.#url = url;
    this.#credentials = credentials;
    this.#authenticate = authenticate;
  }

  /** The token to send (authenticating first if there is none yet). */
  get(): Promise<string | undefined> {
    this.#current ??= this.#fetch();
    return this.#current;
  }

  /** A new token after etcd refused `rejected`; callers refused together share one. */
  async renew(rejected: string | undefined): Promise<string | undefined> {
    const current = await this.get().catch(() => undefined);
    if (current === rejected) this.#current = this.#fetch();
    return this.get();
  }

  async #fetch(): Promise<string | undefined> {
    const { username, password } = this.#credentials;
    let answer: unknown;
    try {
      answer = await this.#authenticate({ name: username, password });
    } catch (e) {
      // Without auth there is no token to send, until etcd asks for one (renew).
      if (e instanceof EtcdRefusal && /authentication is not enabled/.test(e.detail)) return undefined;
      this.#current = undefined; // the next call tries again
      // unreachable members, or a refusal that is not about the credentials: as for any call
      if (!(e instanceof EtcdRefusal)) throw e;
      const detail = e.detail;
      if (!/authentication failed|password/.test(detail)) throw e;
      // etcd's message names neither the user nor the password; we name the user only.
      throw new StoreError(this.#url, `etcd refused user "${username}": ${detail.replace(/^etcdserver: /, '')}`, { cause: e });
    }
    const token = (answer as { token?: unknown } | null)?.token;
    if (typeof token !== 'string' || token === '') {
      this.#current = undefined;
      throw new StoreError(this.#url, `etcd answered auth/authenticate for user "${username}" without a token`);
    }
    return token;
  }
}
