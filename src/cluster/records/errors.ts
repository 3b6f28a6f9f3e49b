/**
 * Errors the cluster back end's callers branch on, each carrying the data that explains it.
 * Bad arguments (names, CIDRs, sizes) are built-in TypeError/RangeError naming field and value.
 */
import type { Family } from '../../ip/index.js';

/**
 * A compare-and-swap loop ran out of attempts because other writers kept changing the same
 * records (CNI code 11, try again later). Nothing was written by the failed operation.
 */
export class ContentionError extends Error {
  override readonly name = 'ContentionError';
  readonly failure = 'transient';
  constructor(
    readonly operation: string,
    readonly attempts: number,
    readonly lastConflict: readonly string[],
  ) {
    super(
      `${operation}: gave up after ${attempts} attempts, other writers kept changing ${lastConflict.join(', ') || 'the datastore'} (excessive concurrent IPAM requests; try again)`,
    );
  }
}

/** No free address of `family` for `node` in the pools it may use (CNI code 100). Nothing was written. */
export class PoolExhaustedError extends Error {
  override readonly name = 'PoolExhaustedError';
  readonly failure = 'exhausted';
  constructor(
    readonly family: Family,
    readonly node: string,
    readonly pools: readonly string[],
    readonly requested: number,
    readonly available: number,
    /** Why no new block could be claimed, when that is part of the story. */
    readonly blockLimit?: string,
    /**
     * Free addresses the pools' reuse quarantine kept back (src/alloc/block-quarantine.ts), and
     * when the first of them may be handed out again (ISO time); absent when none were.
     */
    readonly quarantined?: { readonly count: number; readonly until: string },
  ) {
    super(
      `no free IPv${family} address for node "${node}" in pools [${pools.join(', ')}]: requested ${requested}, found ${available}` +
        (blockLimit ? ` (${blockLimit})` : '') +
        (quarantined
          ? `; ${quarantined.count} free address${quarantined.count === 1 ? ' is' : 'es are'} quarantined after ${quarantined.count === 1 ? 'its' : 'their'} release (pool reuseAfter) until ${quarantined.until} at the earliest`
          : ''),
    );
  }
}

/** No enabled pool of `family` may serve `node` (none exist, none match its labels, or the named ones are missing/disabled). */
export class NoPoolError extends Error {
  override readonly name = 'NoPoolError';
  readonly failure = 'no-pool';
  constructor(
    readonly family: Family | undefined,
    readonly node: string,
    readonly requestedPools: readonly string[] | undefined,
    readonly reason: string,
  ) {
    super(`no usable ${family ? `IPv${family} ` : ''}pool for node "${node}"${requestedPools ? ` (pools [${requestedPools.join(', ')}])` : ''}: ${reason}`);
  }
}

/**
 * A specific address cannot be given out (CNI code 101): taken, reserved, outside every pool,
 * affine elsewhere, or not usable (its block's network, gateway or broadcast address).
 */
export class AddressUnavailableError extends Error {
  override readonly name = 'AddressUnavailableError';
  readonly failure = 'address-unavailable';
  constructor(
    readonly address: string,
    /**
     * 'attachment-holds': a repeated ADD of an attachment asks for an address it does not hold.
     * 'quarantined': it was released less than its pool's reuseAfter ago (the detail says until when).
     */
    readonly reason: 'taken' | 'reserved' | 'no-pool' | 'pool-disabled' | 'foreign-block' | 'unusable' | 'attachment-holds' | 'quarantined',
    readonly detail: string,
    /** For 'taken': the handle holding it. */
    readonly holder?: string,
  ) {
    super(`address ${address} is not available: ${detail}`);
  }
}

/** A pool cannot be created: its name is taken or its CIDR overlaps another pool. */
export class PoolConflictError extends Error {
  override readonly name = 'PoolConflictError';
  constructor(
    readonly pool: string,
    readonly conflictsWith: string,
    detail: string,
    options?: ErrorOptions,
  ) {
    super(`Cannot create pool "${pool}": ${detail}`, options);
  }
}

/** A pool cannot be deleted while addresses in it are allocated. Nothing was changed. */
export class PoolInUseError extends Error {
  override readonly name = 'PoolInUseError';
  constructor(
    readonly pool: string,
    readonly allocated: number,
  ) {
    super(`Cannot delete pool "${pool}": ${allocated} address${allocated === 1 ? ' is' : 'es are'} allocated in it (release them first: podipam ipam release)`);
  }
}

/**
 * A change to a pool (resize, block size) that the pool's contents forbid: another pool's
 * space, addresses still allocated where the change would remove them. Nothing was changed.
 */
export class PoolChangeRefusedError extends Error {
  override readonly name = 'PoolChangeRefusedError';
  constructor(
    readonly pool: string,
    readonly change: string,
    detail: string,
    /** The addresses in the way, when that is the reason (all of them). */
    readonly addresses: readonly string[] = [],
    options?: ErrorOptions,
  ) {
    super(`Cannot ${change} pool "${pool}": ${detail}`, options);
  }
}

/** A named record (pool, reservation) does not exist. */
export class NotFoundError extends Error {
  override readonly name = 'NotFoundError';
  constructor(
    readonly kind: string,
    readonly id: string,
  ) {
    super(`${kind} "${id}" does not exist`);
  }
}

/** A datastore record that does not decode (corrupt JSON, bad field); names the key and the problem. */
export class CorruptRecordError extends Error {
  override readonly name = 'CorruptRecordError';
  /** The datastore holds something unusable: CNI code 5 (50 for STATUS), never 999. */
  readonly failure = 'datastore';
  constructor(
    readonly key: string,
    readonly problem: string,
    options?: ErrorOptions,
  ) {
    super(`datastore record ${key} is corrupt: ${problem}`, options);
  }
}
