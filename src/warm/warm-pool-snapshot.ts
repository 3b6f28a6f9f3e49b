import { type Addr, type Family, formatAddr } from '../ip/addr.js';

/**
 * An idle address and the time from which any pod may have it (its cooldown's end); `releasedAt`:
 * when a pod of this node let it go (absent for an address refilled from the cluster), from
 * which its pool's reuse quarantine also counts (see WarmPool.setReuseAfter).
 */
export interface IdleEntry {
  readonly addr: Addr;
  readonly freeAt: number;
  readonly releasedAt?: number;
}

/** An address held by one attachment key; `sticky`: its release reserves it for the key. */
export interface InUseEntry {
  readonly key: string;
  readonly addr: Addr;
  readonly sticky: boolean;
}

/** An address a sticky key released (at `releasedAt`, when known): the key's until `expiresAt`, then idle from `freeAt`. */
export interface ReservedEntry {
  readonly key: string;
  readonly addr: Addr;
  readonly expiresAt: number;
  readonly freeAt: number;
  readonly releasedAt?: number;
}

/**
 * A warm pool's whole state, in a stable order (idle and returning in queue order, in use and
 * reserved by key) — what the resource DB stores. `returning` and `pending` describe I/O in
 * flight: `WarmPool.restore` folds `returning` back into the idle queue (a restart forgets the
 * return; the next plan picks them again) and drops `pending` (the refills never arrived).
 */
export interface WarmPoolSnapshot {
  readonly idle: readonly IdleEntry[];
  readonly inUse: readonly InUseEntry[];
  readonly reserved: readonly ReservedEntry[];
  readonly returning?: readonly IdleEntry[];
  readonly pending?: number;
}

/**
 * Checks a snapshot before a pool is rebuilt from it: every address of `family`, none twice,
 * no key both in use and reserved (or twice), every time a finite number, `sticky` a boolean.
 * RangeError naming the entry (`reserved[2].key`) and its value.
 */
export function checkWarmPoolSnapshot(s: WarmPoolSnapshot, family: Family): void {
  const addrs = new Set<bigint>();
  const keys = new Set<string>();
  const fail = (field: string, why: string, value: unknown): never => {
    const v = value as Partial<Addr> | null;
    const isAddr = typeof v === 'object' && v !== null && typeof v.value === 'bigint' && (v.family === 4 || v.family === 6);
    const shown = isAddr ? formatAddr(value as Addr) : typeof value === 'string' ? JSON.stringify(value) : String(value);
    throw new RangeError(`Cannot restore WarmPool as '${field}' ${why}: current value is ${shown}`);
  };
  const addr = (field: string, a: Addr): void => {
    if (a?.family !== family || typeof a.value !== 'bigint') fail(field, `must be an IPv${family} address`, a);
    if (addrs.has(a.value)) fail(field, 'is held twice', a);
    addrs.add(a.value);
  };
  const key = (field: string, k: string): void => {
    if (typeof k !== 'string') fail(field, 'must be a string', k);
    if (keys.has(k)) fail(field, 'is held twice', k);
    keys.add(k);
  };
  const time = (field: string, t: number): void => {
    if (!Number.isFinite(t)) fail(field, 'must be a finite number', t);
  };
  const lists: [string, readonly IdleEntry[]][] = [
    ['idle', s.idle],
    ['returning', s.returning ?? []],
  ];
  for (const [name, list] of lists) {
    list.forEach((e, i) => {
      addr(`${name}[${i}].addr`, e.addr);
      time(`${name}[${i}].freeAt`, e.freeAt);
      if (e.releasedAt !== undefined) time(`${name}[${i}].releasedAt`, e.releasedAt);
    });
  }
  s.inUse.forEach((e, i) => {
    addr(`inUse[${i}].addr`, e.addr);
    key(`inUse[${i}].key`, e.key);
    if (typeof e.sticky !== 'boolean') fail(`inUse[${i}].sticky`, 'must be a boolean', e.sticky);
  });
  s.reserved.forEach((e, i) => {
    addr(`reserved[${i}].addr`, e.addr);
    key(`reserved[${i}].key`, e.key);
    time(`reserved[${i}].expiresAt`, e.expiresAt);
    time(`reserved[${i}].freeAt`, e.freeAt);
    if (e.releasedAt !== undefined) time(`reserved[${i}].releasedAt`, e.releasedAt);
  });
}
