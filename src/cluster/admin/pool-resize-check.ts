/**
 * What `pool resize` may do, decided from records alone (pure): the new CIDR parsed and
 * validated as a pool CIDR, of the pool's family, containing the old CIDR (grow) or inside it
 * (shrink), holding at least one block of every size the pool's blocks have (so each block is
 * either inside the new CIDR or wholly outside it). Whether it overlaps another pool's space is
 * the write gate's to prove (src/cluster/gate), in the resize's own transaction. Errors name the
 * field (`cidr`) and the value: RangeError/TypeError for a bad value, PoolChangeRefusedError for
 * a resize an unfinished shrink forbids.
 */
import { formatPrefix, type Prefix, prefixContainsPrefix } from '../../ip/index.js';
import { PoolChangeRefusedError, type Pool, poolBlockSizes, validatePoolSpec } from '../records/index.js';

export type ResizeKind = 'grow' | 'shrink' | 'same';

export function checkResize(pool: Pool, cidrText: string): { cidr: Prefix; kind: ResizeKind } {
  if (typeof cidrText !== 'string') throw new TypeError(`invalid pool cidr ${JSON.stringify(cidrText)}: not a string`);
  // The same rules as a new pool's CIDR (canonical, unicast, not link-local); the block size checked below.
  const cidr = validatePoolSpec({ name: pool.name, cidr: cidrText, blockSize: undefined }).cidr;
  const old = formatPrefix(pool.cidr);
  if (cidr.family !== pool.cidr.family) {
    throw new RangeError(
      `invalid pool cidr "${cidrText}": pool "${pool.name}" is IPv${pool.cidr.family} (${old}); a resize keeps the family (create another pool instead)`,
    );
  }
  if (pool.shrinkingFrom && formatPrefix(cidr) !== old) {
    throw new PoolChangeRefusedError(pool.name, 'resize', `its shrink to ${old} is unfinished; run the resize to ${old} again first`);
  }
  let kind: ResizeKind;
  if (formatPrefix(cidr) === old) kind = 'same';
  else if (prefixContainsPrefix(cidr, pool.cidr)) kind = 'grow';
  else if (prefixContainsPrefix(pool.cidr, cidr)) kind = 'shrink';
  else
    throw new RangeError(
      `invalid pool cidr "${cidrText}": it neither contains nor lies inside the pool's ${old} (a resize grows or shrinks the pool in place)`,
    );
  const tooSmall = poolBlockSizes(pool).find((s) => s < cidr.len);
  if (tooSmall !== undefined) {
    throw new RangeError(
      `invalid pool cidr "${cidrText}": the pool has /${tooSmall} blocks, so its cidr must be /${tooSmall} or larger (it must hold at least one block)`,
    );
  }
  return { cidr, kind };
}
