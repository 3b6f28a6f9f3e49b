/**
 * The addresses a request names (`req.ips`), as one part of planAssign: each from its block
 * (an existing one of any of its pool's sizes, else a new one claimed with its guards), or an
 * AddressUnavailableError naming the address and why.
 */
import { assignOrdinal, holderOf, newBlock, ordinalOf } from '../../alloc/block.js';
import { excludedRole } from '../../alloc/block-addressing.js';
import { type Addr, type Prefix, addrEquals, formatAddr, formatPrefix, prefixContains, prefixOf } from '../../ip/index.js';
import { ipSetOf, blockKey, poolBlockSizes, poolUnusableWhy, poolUsable, AddressUnavailableError } from '../records/index.js';
import { claimGuards } from './claim-candidate.js';
import { NeedRead, type PlanWork } from './plan-work.js';

/** Gives the handle every address of `req.ips` it does not hold yet (see the module comment). */
export function assignSpecific(w: PlanWork): void {
  const { req, snap } = w.input;
  const targets: { ip: Addr; cidr: Prefix; key: string }[] = [];
  const missing: string[] = [];
  for (const ip of req.ips ?? []) {
    if (w.holds(ip) || targets.some((t) => addrEquals(t.ip, ip))) continue;
    const text = formatAddr(ip);
    const pool = snap.pools.find((p) => prefixContains(p.cidr, ip));
    if (!pool) throw new AddressUnavailableError(text, 'no-pool', 'it is not in any pool');
    if (!poolUsable(pool)) throw new AddressUnavailableError(text, 'pool-disabled', `pool "${pool.name}" is ${poolUnusableWhy(pool)}`);
    if (snap.reserved.contains(ip)) throw new AddressUnavailableError(text, 'reserved', 'it is reserved');
    const set = req.adopt ? undefined : ipSetOf(snap.ipSets, ip);
    if (set) throw new AddressUnavailableError(text, 'reserved', `it belongs to ip-set "${set.name}"`);
    // The block holding it: an existing one of any of the pool's sizes, else a new one of its size.
    const keys = poolBlockSizes(pool).map((s) => blockKey(prefixOf(ip, s)));
    const unknown = keys.filter((k) => w.state(k) === undefined);
    if (unknown.length > 0) {
      missing.push(...unknown);
      continue;
    }
    const existing = poolBlockSizes(pool)
      .map((s) => prefixOf(ip, s))
      .find((c) => w.state(blockKey(c))?.block);
    const cidr = existing ?? prefixOf(ip, pool.blockSize);
    const role = excludedRole(cidr, ordinalOf(cidr, ip));
    if (role !== undefined && !req.adopt) throw new AddressUnavailableError(text, 'unusable', `it is ${role} (never handed out)`);
    const key = blockKey(cidr);
    if (!existing) {
      const guards = claimGuards(pool, cidr);
      const over = guards.find((g) => w.state(g)?.block);
      if (over)
        throw new AddressUnavailableError(
          text,
          'unusable',
          `its /${pool.blockSize} block ${formatPrefix(cidr)} would overlap the existing block ${over.slice('blocks/'.length).replace('-', '/')}`,
        );
      w.guards.set(key, guards);
    }
    targets.push({ ip, cidr, key });
  }
  if (missing.length > 0) throw new NeedRead(missing);
  for (const t of targets) {
    const st = w.state(t.key)!;
    const claimed = st.block === null;
    const block = st.block ?? newBlock(t.cidr, req.node);
    if (block.affinity !== req.node && snap.config.strictAffinity) {
      throw new AddressUnavailableError(
        formatAddr(t.ip),
        'foreign-block',
        `its block ${formatPrefix(t.cidr)} is affine to ${block.affinity ? `node "${block.affinity}"` : 'no node'} and strictAffinity is on`,
      );
    }
    const o = ordinalOf(t.cidr, t.ip);
    const holder = holderOf(block, o);
    if (holder !== undefined && holder !== req.handle) {
      throw new AddressUnavailableError(formatAddr(t.ip), 'taken', `it is held by handle "${holder}"`, holder);
    }
    if (holder === req.handle) continue;
    const until = w.quarantine(block).get(o);
    if (until !== undefined) {
      throw new AddressUnavailableError(
        formatAddr(t.ip),
        'quarantined',
        `it was released recently and is quarantined until ${new Date(until).toISOString()} (pool reuseAfter)`,
      );
    }
    w.put(t.key, st.rev, assignOrdinal(block, o, req.handle, req.adopt), claimed, [o]);
  }
}
