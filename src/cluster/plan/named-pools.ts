/**
 * The pools an assignment request names (`pools`, `poolsByFamily`: src/cluster/records/assignment.ts),
 * resolved against a snapshot's pools, purely: an entry is a pool name, a canonical CIDR
 * (Calico's annotations) or a pattern (Spiderpool's: src/model/pool-pattern.ts, every matching
 * pool in name order). Each entry is resolved once per instance, so a pattern is matched
 * against every pool once per plan. `placedProblem` says why an annotated entry cannot serve.
 */
import { type Family, formatPrefix } from '../../ip/index.js';
import { isPoolPattern, poolMatcher } from '../../model/pool-pattern.js';
import { type Pool, poolUnusableWhy, poolUsable, type AssignRequest } from '../records/index.js';

export class NamedPools {
  readonly #pools: readonly Pool[];
  readonly #req: Pick<AssignRequest, 'pools' | 'poolsByFamily'>;
  readonly #named = new Map<string, Pool[]>();

  /** `pools`: every pool, sorted by name (ClusterSnapshot.pools). */
  constructor(pools: readonly Pool[], req: Pick<AssignRequest, 'pools' | 'poolsByFamily'>) {
    this.#pools = pools;
    this.#req = req;
  }

  /** The pools `entry` names (none: it names no pool). */
  of(entry: string): readonly Pool[] {
    let got = this.#named.get(entry);
    if (got === undefined) {
      if (entry.includes('/')) got = this.#pools.filter((p) => formatPrefix(p.cidr) === entry);
      else if (!isPoolPattern(entry)) got = this.#pools.filter((p) => p.name === entry);
      else {
        const match = poolMatcher(entry);
        got = this.#pools.filter((p) => match(p.name));
      }
      this.#named.set(entry, got);
    }
    return got;
  }

  /** The pools the request names for `family` (every pool when it names none; undefined: every family's), in preference order, each once. */
  forFamily(family: Family | undefined): readonly Pool[] {
    const { pools, poolsByFamily } = this.#req;
    if (!pools) return this.#pools;
    const names = poolsByFamily && family !== undefined ? (poolsByFamily[family] ?? []) : pools;
    return [...new Set(names.flatMap((n) => this.of(n)))];
  }

  /**
   * Why the annotated `entry` cannot serve (undefined: it can): it must name a pool that exists,
   * is usable, selects the node (`selects`) and — named for one family (poolsByFamily) — is of
   * that family; a pattern must match at least one such pool.
   */
  placedProblem(entry: string, node: string, selects: (p: Pool) => boolean): string | undefined {
    const fams = this.#familiesOf(entry);
    const famText = fams ? fams.map((f) => `IPv${f}`).join(' or ') : undefined;
    if (isPoolPattern(entry)) {
      const matched = this.of(entry);
      const ofFamily = matched.filter((p) => fams === undefined || fams.includes(p.cidr.family));
      const what = `pool pattern "${entry}"`;
      if (matched.length === 0) return `${what} matches no pool`;
      if (ofFamily.length === 0) return `${what} matches no ${famText} pool (it matches ${matched.map((p) => p.name).join(', ')})`;
      if (ofFamily.some((p) => poolUsable(p) && selects(p))) return undefined;
      return `${what} matches no pool that is enabled and selects node "${node}" (it matches ${ofFamily.map((p) => `${p.name}: ${poolUsable(p) ? 'not selecting the node' : poolUnusableWhy(p)}`).join('; ')})`;
    }
    const pool = this.of(entry)[0];
    const what = entry.includes('/') ? `pool CIDR ${entry}` : `pool "${entry}"`;
    if (!pool) return `${what} does not exist`;
    if (fams && !fams.includes(pool.cidr.family)) return `${what} is an IPv${pool.cidr.family} pool, named for ${famText}`;
    if (!poolUsable(pool)) return `${what} is ${poolUnusableWhy(pool)}`;
    if (!selects(pool)) return `${what} does not select node "${node}" (nodeSelector ${JSON.stringify(pool.nodeSelector.text)})`;
    return undefined;
  }

  /** The families whose list names `entry` (undefined: the request names its pools for every family). */
  #familiesOf(entry: string): Family[] | undefined {
    const by = this.#req.poolsByFamily;
    if (!by) return undefined;
    return ([4, 6] as Family[]).filter((f) => by[f]?.includes(entry));
  }
}
