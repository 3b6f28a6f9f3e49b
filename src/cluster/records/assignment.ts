/** What an assignment asks for and what it gives back (the cluster service's pod-path types). */
import type { Addr, Prefix } from '../../ip/index.js';
import type { HandleAttrs } from './handle-record.js';
import type { AnnotationSource, PoolsByFamily } from '../../model/placement.js';

export interface AssignRequest {
  readonly node: string;
  readonly handle: string;
  /** Stored on the handle record (GC filters on network and node). */
  readonly attrs?: Omit<HandleAttrs, 'node'>;
  /** Addresses to pick per family, or 'each-family': one per family that has a usable pool. */
  readonly auto?: { readonly 4?: number; readonly 6?: number } | 'each-family';
  /** Specific addresses to assign. */
  readonly ips?: readonly Addr[];
  /**
   * Restrict auto-assignment to these pools (names, canonical CIDRs equal to a pool's, or
   * patterns with `*`, `?`, `[…]`: src/model/pool-pattern.ts), in order of preference.
   */
  readonly pools?: readonly string[];
  /**
   * With `pools`: the pools per family (each entry is also in `pools`). A family's address then
   * comes only from its list and a family without a list gets none; with `placedBy`, a named
   * pool of another family than the list naming it is a PlacementError.
   */
  readonly poolsByFamily?: PoolsByFamily;
  /**
   * Take the address of its family from this ip-set (src/cluster/records/ip-set-record.ts): a free one of
   * the set's addresses, which no other request is given; other families as `auto` says.
   */
  readonly ipSet?: string;
  /**
   * The annotation that chose `ips`, `pools` or `ipSet` (src/cluster/plan/placement-request.ts):
   * a named pool or set that does not exist or cannot serve the node is then a PlacementError
   * (CNI code 7) naming it and the pod, never a fallback to other pools.
   */
  readonly placedBy?: { readonly source: AnnotationSource; readonly pod: string };
  /**
   * A sticky pod's hold handle (src/cluster/records/sticky-hold-id.ts): when it exists, has not expired
   * and its addresses suit this request, they are taken over (their holder becomes `handle`,
   * the hold is deleted) in the same transaction instead of allocating (plan-assign.ts).
   */
  readonly takeOver?: string;
  /**
   * The handle is one attachment (a CNI ADD's container + interface): once it holds anything, a
   * repeated request is answered with what it holds and adds nothing — whatever the request's
   * pools, ip-set or family count now say — and asking for a specific address it does not hold
   * is an AddressUnavailableError ('attachment-holds') naming what it holds. Never a second
   * address for one attachment. Without it (imports, the warm pool's refills, the API) a
   * request adds to what the handle holds.
   */
  readonly attachment?: boolean;
  /**
   * `ips` are addresses pods already use (`podipam import host-local`): record them even when
   * one is a block's network, gateway or broadcast address, which are otherwise refused.
   */
  readonly adopt?: boolean;
}

/**
 * One address a handle holds, as a pod sees it: the address in its block's subnet
 * (`addr/prefixLen` = 10.244.3.5/26) behind the block's gateway (10.244.3.1), which the node
 * holds and other nodes route the block to (see src/alloc/block-addressing.ts).
 */
export interface Assignment {
  readonly addr: Addr;
  /** The pool holding the address ('' when no pool contains it any more). */
  readonly pool: string;
  /** The block's prefix length. */
  readonly prefixLen: number;
  /** The block's gateway: its first usable address, never handed out. */
  readonly gateway: Addr;
  readonly block: Prefix;
}
