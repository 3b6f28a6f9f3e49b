/** Options accepted by `openStore` and by each back end's `open`. */
export interface StoreOptions {
  /**
   * How long one request may wait for the engine, in milliseconds: the SQLite busy timeout,
   * or the per-endpoint request timeout for etcd. Default DEFAULT_TIMEOUT_MS.
   */
  readonly timeoutMs?: number;
  /**
   * Where etcd stores read PODIPAM_ETCD_CA, _CERT, _KEY, _SERVERNAME, _USERNAME and
   * _PASSWORD (what the URL does not give); default process.env.
   */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /**
   * May opening create the store? Default true (a write, `podipam serve`, the plugin). False
   * for a read-only command: a SQLite file that does not exist is StoreMissingError naming it,
   * and neither the file nor its directory is created. etcd and memory stores ignore it.
   */
  readonly create?: boolean;
  /**
   * A process that makes a few requests and exits (the per-call CNI plugin): etcd is spoken to
   * through its JSON gateway over node:http, which loads ~12 ms faster than node:http2. Default
   * false: gRPC over HTTP/2, which costs etcd less than half the CPU per request — what every
   * long-lived process (agent, server, controller) and the CLI use. SQLite ignores it.
   */
  readonly oneShot?: boolean;
  /**
   * Must a commit reach the disk before it is answered? Default true (SQLite's synchronous=FULL).
   * False only for a store thrown away after use — the agent's warm-up, whose commits must run
   * the code pods' commits run, not wait for the disk: a SQLite store then never flushes
   * (synchronous=OFF; a crash may lose or corrupt it). etcd and memory stores ignore it.
   */
  readonly durable?: boolean;
}

/** 2 s: the CNI plugin must answer "try again later" (code 11) quickly rather than hang. */
export const DEFAULT_TIMEOUT_MS = 2000;

/** The timeout the options ask for, or the default; RangeError unless a positive number. */
export function resolveTimeoutMs(options: StoreOptions | undefined): number {
  const ms = options?.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (!Number.isFinite(ms) || ms <= 0) {
    throw new RangeError(`Cannot open the datastore as 'timeoutMs' must be a positive number of milliseconds: current value is ${ms}`);
  }
  return ms;
}
