/**
 * etcd refused a request itself (a gRPC error that says the request is wrong, not the
 * member): every member would answer the same. Internal to the etcd back end: EtcdGateway
 * turns it into StoreError.
 */
export class EtcdRefusal extends Error {
  override readonly name = 'EtcdRefusal';
  constructor(
    readonly endpoint: string,
    readonly path: string,
    readonly detail: string,
    readonly status: number,
    readonly code: number | undefined,
  ) {
    super(`${endpoint} refused ${path}: ${detail} (${status === 200 ? '' : `HTTP ${status}, `}gRPC code ${code ?? 'none'})`);
  }

  /** The token was missing, expired or revoked: authenticating again may help. */
  get tokenRejected(): boolean {
    return rejectsToken(this.detail);
  }
}

/** An etcd error text that says the request's auth token was missing, expired or revoked. */
export function rejectsToken(detail: string): boolean {
  return /invalid auth token|user name is empty/.test(detail);
}
