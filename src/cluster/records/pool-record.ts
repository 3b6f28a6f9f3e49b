/**
 * IP pools (`pools/<name>`): a CIDR cut into blocks of `blockSize`, offered to the nodes its
 * nodeSelector matches unless disabled, draining or being deleted. The CIDR can grow or shrink
 * (`pool resize`, pool-resize.ts) and the block size can change (`pool set`, pool-settings.ts):
 * new blocks then have the new size while existing blocks keep theirs, so the record lists the
 * other sizes its blocks may still have (`formerBlockSizes`), which every claim of a new block
 * proves it does not overlap (see src/alloc/overlapping-blocks.ts). `reuseAfterMs` (stored only
 * when set) is the pool's reuse quarantine (reuse-after.ts).
 */
import { DEFAULT_BLOCK_SIZE, checkBlockSize, checkStoredBlockSize } from '../../alloc/block-layout.js';
import { type Prefix, formatPrefix, parsePrefix, prefixOverlaps } from '../../ip/index.js';
import type { Entry } from '../../store/index.js';
import { CorruptRecordError } from './errors.js';
import { POOL_PREFIX } from './keys.js';
import { checkResourceName } from '../../model/names.js';
import { type NodeSelector, parseNodeSelector } from '../../model/node-selector.js';
import { bool, int, optStr, orCorrupt, parseRecord, str } from './record-json.js';
import { MAX_REUSE_AFTER_MS, parseReuseAfter, reuseAfterText } from './reuse-after.js';

export interface Pool {
  readonly name: string;
  readonly cidr: Prefix;
  readonly blockSize: number;
  readonly nodeSelector: NodeSelector;
  /** No new assignments; existing ones are kept. */
  readonly disabled: boolean;
  /**
   * `pool drain`: no new assignments nor blocks, existing ones are kept until their pods go;
   * behaves as disabled for allocation, kept apart so an operator sees why (and `undrain`
   * never enables a pool someone disabled).
   */
  readonly draining: boolean;
  /**
   * Block sizes other than `blockSize` that blocks of this pool may still have (sizes it had
   * before a `pool set --block-size`), ascending; empty for a pool whose size never changed.
   */
  readonly formerBlockSizes: readonly number[];
  /**
   * Set by a shrinking `pool resize` between its first step (the CIDR already narrowed, so no
   * new block outside it) and its last (empty blocks outside deleted): the CIDR it had. Blocks
   * in it still count as the pool's; running the same resize again finishes it.
   */
  readonly shrinkingFrom?: Prefix;
  /** Set by `pool delete` while it removes the pool's empty blocks; behaves as disabled. */
  readonly deleting: boolean;
  /**
   * The reuse quarantine (reuse-after.ts, src/alloc/block-quarantine.ts): an address released
   * anywhere is handed to no holder anywhere for this long (ms); 0: off.
   */
  readonly reuseAfterMs: number;
}

/** What a caller gives to create a pool (strings as typed on a command line or in JSON). */
/** A pool as printed (CLI tables, `--json`, `ipam show`): CIDR in text, selector as written. */
export function poolText(p: Pool): {
  name: string;
  cidr: string;
  blockSize: number;
  nodeSelector: string;
  disabled: boolean;
  draining: boolean;
  deleting: boolean;
  formerBlockSizes: number[];
  reuseAfter: string;
} {
  return {
    name: p.name,
    cidr: formatPrefix(p.cidr),
    blockSize: p.blockSize,
    nodeSelector: p.nodeSelector.text,
    disabled: p.disabled,
    draining: p.draining,
    deleting: p.deleting,
    formerBlockSizes: [...p.formerBlockSizes],
    reuseAfter: reuseAfterText(p.reuseAfterMs),
  };
}

/** Every block size the pool's blocks may have: its own first, then former ones. */
export function poolBlockSizes(p: Pool): number[] {
  return [p.blockSize, ...p.formerBlockSizes];
}

/** The space whose blocks are the pool's: its CIDR, or while it shrinks, the CIDR it had. */
export function poolSpace(p: Pool): Prefix {
  return p.shrinkingFrom ?? p.cidr;
}

/** 'deleting', 'draining', 'disabled' or 'enabled' (as printed). */
export function poolState(p: Pool): 'deleting' | 'draining' | 'disabled' | 'enabled' {
  return p.deleting ? 'deleting' : p.draining ? 'draining' : p.disabled ? 'disabled' : 'enabled';
}

export interface PoolSpec {
  readonly name: string;
  readonly cidr: string;
  readonly blockSize?: number;
  readonly nodeSelector?: string;
  readonly disabled?: boolean;
  /** A duration ("30s"; reuse-after.ts); absent: off. */
  readonly reuseAfter?: string;
}

const LINK_LOCAL = [parsePrefix('169.254.0.0/16'), parsePrefix('fe80::/10')];

/** Space that is never a pod's unicast address, by what it is. */
const NOT_UNICAST: readonly (readonly [Prefix, string])[] = [
  [parsePrefix('0.0.0.0/8'), 'the unspecified ("this network") range'],
  [parsePrefix('127.0.0.0/8'), 'loopback'],
  [parsePrefix('224.0.0.0/4'), 'multicast'],
  [parsePrefix('::/128'), 'the unspecified address'],
  [parsePrefix('::1/128'), 'loopback'],
  [parsePrefix('ff00::/8'), 'multicast'],
  // Written as a value: the parser reads "::ffff:0:0/96" as IPv4 0.0.0.0/0, as Go does.
  [{ family: 6, base: 0xffffn << 32n, len: 96 }, 'IPv4-mapped'],
];

/**
 * Validates a spec into a Pool: name a resource name, CIDR canonical (no host bits), written
 * in its own family, and not overlapping link-local, loopback, multicast, unspecified or
 * IPv4-mapped space, block size allowed for the family (default /26 or /122; at most /30 or
 * /126, so a block keeps a usable address) with at least one block in the pool, selector
 * well-formed. TypeError/RangeError naming the field.
 */
export function validatePoolSpec(spec: PoolSpec): Pool {
  checkResourceName('pool name', spec.name);
  let cidr: Prefix;
  try {
    cidr = parsePrefix(spec.cidr);
  } catch (e) {
    throw new TypeError(`invalid pool cidr ${JSON.stringify(spec.cidr)}: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
  // The parser reads an IPv4-mapped address as IPv4 (::ffff:10.0.0.0/104 is 10.0.0.0/8): a
  // pool is refused rather than silently changing family.
  if (cidr.family === 4 && spec.cidr.includes(':')) {
    throw new RangeError(`invalid pool cidr "${spec.cidr}": an IPv4-mapped IPv6 CIDR is not a pool; for IPv4 write ${formatPrefix(cidr)}`);
  }
  const ll = LINK_LOCAL.find((p) => prefixOverlaps(p, cidr));
  if (ll) throw new RangeError(`invalid pool cidr "${spec.cidr}": it overlaps link-local ${formatPrefix(ll)}`);
  const special = NOT_UNICAST.find(([p]) => prefixOverlaps(p, cidr));
  if (special) {
    const where = special[1] === 'IPv4-mapped' ? '::ffff:0:0/96' : formatPrefix(special[0]);
    throw new RangeError(`invalid pool cidr "${spec.cidr}": it overlaps ${special[1]} ${where}; pod addresses must be unicast`);
  }
  const blockSize = spec.blockSize ?? DEFAULT_BLOCK_SIZE[cidr.family];
  checkBlockSize(cidr, blockSize);
  const nodeSelector = parseNodeSelector(spec.nodeSelector ?? 'all()');
  if (spec.disabled !== undefined && typeof spec.disabled !== 'boolean') {
    throw new TypeError(`invalid pool disabled ${JSON.stringify(spec.disabled)}: not a boolean`);
  }
  const reuseAfterMs = spec.reuseAfter === undefined ? 0 : parseReuseAfter(spec.reuseAfter);
  return {
    name: spec.name,
    cidr,
    blockSize,
    nodeSelector,
    disabled: spec.disabled ?? false,
    draining: false,
    deleting: false,
    formerBlockSizes: [],
    reuseAfterMs,
  };
}

/** True when the pool may hand out new addresses. */
export function poolUsable(pool: Pool): boolean {
  return !pool.disabled && !pool.deleting && !pool.draining;
}

/** Why an unusable pool serves nothing ("being deleted", "draining", "disabled"). */
export function poolUnusableWhy(pool: Pool): string {
  return pool.deleting ? 'being deleted' : pool.draining ? 'draining' : 'disabled';
}

export function encodePool(pool: Pool): string {
  const o: Record<string, unknown> = {
    cidr: formatPrefix(pool.cidr),
    blockSize: pool.blockSize,
    nodeSelector: pool.nodeSelector.text,
    disabled: pool.disabled,
  };
  if (pool.deleting) o.deleting = true;
  if (pool.draining) o.draining = true;
  if (pool.formerBlockSizes.length > 0) o.formerBlockSizes = [...pool.formerBlockSizes];
  if (pool.shrinkingFrom) o.shrinkingFrom = formatPrefix(pool.shrinkingFrom);
  if (pool.reuseAfterMs > 0) o.reuseAfterMs = pool.reuseAfterMs;
  return JSON.stringify(o);
}

/** Decodes `pools/<name>`; CorruptRecordError naming the key and field. */
export function decodePool(entry: Entry): Pool {
  if (!entry.key.startsWith(POOL_PREFIX)) throw new CorruptRecordError(entry.key, 'not a pool key');
  const o = parseRecord(entry);
  const cidr = orCorrupt(entry.key, () => parsePrefix(str(entry.key, o, 'cidr')));
  const blockSize = int(entry.key, o, 'blockSize', 0, 128);
  orCorrupt(entry.key, () => checkStoredBlockSize(cidr, blockSize));
  const nodeSelector = orCorrupt(entry.key, () => parseNodeSelector(str(entry.key, o, 'nodeSelector')));
  const former = o.formerBlockSizes ?? [];
  if (!Array.isArray(former)) throw new CorruptRecordError(entry.key, `field "formerBlockSizes" is ${JSON.stringify(former)}`);
  const formerBlockSizes = former.map((n: unknown) => {
    if (typeof n !== 'number' || n === blockSize) throw new CorruptRecordError(entry.key, `field "formerBlockSizes" holds ${JSON.stringify(n)}`);
    orCorrupt(entry.key, () => checkStoredBlockSize(cidr, n));
    return n;
  });
  const shrinkText = optStr(entry.key, o, 'shrinkingFrom');
  const shrinkingFrom = shrinkText === undefined ? undefined : orCorrupt(entry.key, () => parsePrefix(shrinkText));
  return {
    name: entry.key.slice(POOL_PREFIX.length),
    cidr,
    blockSize,
    nodeSelector,
    disabled: bool(entry.key, o, 'disabled', false),
    draining: bool(entry.key, o, 'draining', false),
    deleting: bool(entry.key, o, 'deleting', false),
    formerBlockSizes,
    reuseAfterMs: o.reuseAfterMs === undefined ? 0 : int(entry.key, o, 'reuseAfterMs', 0, MAX_REUSE_AFTER_MS),
    ...(shrinkingFrom ? { shrinkingFrom } : {}),
  };
}
