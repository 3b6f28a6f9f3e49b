/** Errors of ip-sets (ip-set-record.ts), each carrying the data that explains it. */

/** Every address of the set is held (CNI code 100). Nothing was written. */
export class IpSetExhaustedError extends Error {
  override readonly name = 'IpSetExhaustedError';
  readonly failure = 'exhausted';
  constructor(
    readonly ipSet: string,
    readonly size: number,
    readonly held: number,
    /** Why free addresses could not be used, when some could not. */
    readonly detail?: string,
  ) {
    super(`no free address in ip-set "${ipSet}": ${held} of its ${size} address${size === 1 ? ' is' : 'es are'} held${detail ? ` (${detail})` : ''}`);
  }
}

/** A request names an ip-set that does not exist or cannot serve (CNI code 7). */
export class NoIpSetError extends Error {
  override readonly name = 'NoIpSetError';
  readonly failure = 'invalid-config';
  constructor(
    readonly ipSet: string,
    readonly reason: string,
  ) {
    super(`ip-set "${ipSet}" cannot be used: ${reason}`);
  }
}

/** An ip-set cannot be created: its name is taken, or an address is not available to it. Nothing was written. */
export class IpSetConflictError extends Error {
  override readonly name = 'IpSetConflictError';
  constructor(
    readonly ipSet: string,
    readonly detail: string,
  ) {
    super(`Cannot create ip-set "${ipSet}": ${detail}`);
  }
}

/** An ip-set cannot be deleted while any of its addresses is held. Nothing was changed. */
export class IpSetInUseError extends Error {
  override readonly name = 'IpSetInUseError';
  constructor(
    readonly ipSet: string,
    /** "10.0.0.5 (pod default/web-1, handle h)" per held address. */
    readonly holders: readonly string[],
  ) {
    super(
      `Cannot delete ip-set "${ipSet}": ${holders.length} of its addresses ${holders.length === 1 ? 'is' : 'are'} held: ${holders.slice(0, 10).join('; ')}${holders.length > 10 ? '; …' : ''}`,
    );
  }
}

/** A pool cannot be deleted while ip-sets draw from it. Nothing was changed. */
export class PoolHasIpSetsError extends Error {
  override readonly name = 'PoolHasIpSetsError';
  constructor(
    readonly pool: string,
    readonly ipSets: readonly string[],
  ) {
    super(
      `Cannot delete pool "${pool}": ip-set${ipSets.length === 1 ? '' : 's'} ${ipSets.map((n) => `"${n}"`).join(', ')} draw${ipSets.length === 1 ? 's' : ''} from it (delete ${ipSets.length === 1 ? 'it' : 'them'} first: podipam ipset delete)`,
    );
  }
}
