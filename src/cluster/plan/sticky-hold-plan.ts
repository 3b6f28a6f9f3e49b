/**
 * Plans a sticky pod's DEL as ONE transaction, purely: every address the attachment's handle
 * holds changes holder to the pod's hold handle (src/cluster/records/sticky-hold-id.ts), the
 * attachment's record is deleted and the hold's record written (its pod, its `stickyUntil`).
 * A hold that already exists (an earlier incarnation's, not taken over) is replaced in the
 * same transaction: its addresses are freed, the latest incarnation's are kept. The compares
 * cover both handle records and every block read, so a concurrent ADD, GC or release makes the
 * transaction fail and be planned again on the current records. Moving an address to the hold
 * frees nothing; the replaced hold's freed addresses are recorded for the reuse quarantine.
 */
import { type Block, addrOfOrdinal } from '../../alloc/block.js';
import { type Quarantine, isDisposable, stampReleases } from '../../alloc/block-quarantine.js';
import { type Addr, type Prefix, formatPrefix, parsePrefix } from '../../ip/index.js';
import type { Compare, Op } from '../../store/index.js';
import { encodeBlock, type HandleAttrs, type HandleRecord, encodeHandle, blockKey, handleKey } from '../records/index.js';
import type { KnownBlock } from '../views/index.js';
import type { HandleState } from './plan-release.js';

export interface HoldInput {
  /** Known blocks by key (undefined = unknown, block null = absent). */
  readonly state: (key: string) => KnownBlock | undefined;
  /** The attachment's handle and its record (present). */
  readonly handle: string;
  readonly handleState: HandleState & { readonly record: HandleRecord };
  /** The hold handle and its state (record undefined = absent). */
  readonly hold: string;
  readonly holdState: HandleState;
  /** The hold record's fields (`stickyUntil` set). */
  readonly attrs: HandleAttrs & { readonly stickyUntil: string };
  /** The reuse quarantine of a block (src/cluster/records/pool-quarantine.ts): the replaced hold's freed addresses are recorded released. */
  readonly quarantine: (cidr: Prefix) => Quarantine;
}

export type HoldPlan =
  | { readonly kind: 'read'; readonly keys: readonly string[] }
  | {
      readonly kind: 'txn';
      readonly compares: readonly Compare[];
      readonly ops: readonly Op[];
      /** Addresses now held by the hold. */
      readonly kept: readonly Addr[];
      /** Addresses of the replaced hold, freed. */
      readonly freed: readonly Addr[];
      /** Blocks written (Block) or deleted (null), by key. */
      readonly blocks: ReadonlyMap<string, Block | null>;
      /** The hold's record after the txn (undefined: the attachment held nothing, the hold is untouched). */
      readonly holdRecord: HandleRecord | undefined;
    };

export function planHold(input: HoldInput): HoldPlan {
  const { handle, handleState, hold, holdState } = input;
  const cidrs = new Set([...handleState.record.blocks.keys(), ...(holdState.record?.blocks.keys() ?? [])]);
  const keys = [...cidrs].map((c) => blockKey(parsePrefix(c)));
  const missing = keys.filter((k) => input.state(k) === undefined);
  if (missing.length > 0) return { kind: 'read', keys: missing };
  const compares: Compare[] = [
    { key: handleKey(handle), rev: handleState.rev },
    { key: handleKey(hold), rev: holdState.rev },
  ];
  // Compared even when nothing of either handle is there: the known state may be an old hint.
  for (const key of keys) compares.push({ key, rev: input.state(key)!.rev });
  const moves = new Map<string, Map<number, string | undefined>>();
  const kept: Addr[] = [];
  const freed: Addr[] = [];
  const counts = new Map<string, number>();
  for (const key of keys) {
    const b = input.state(key)!.block;
    if (!b) continue;
    const change = new Map<number, string | undefined>();
    for (const [o, h] of b.allocations) {
      if (h === handle) {
        change.set(o, hold);
        kept.push(addrOfOrdinal(b.cidr, o));
        counts.set(formatPrefix(b.cidr), (counts.get(formatPrefix(b.cidr)) ?? 0) + 1);
      } else if (h === hold) {
        change.set(o, undefined);
        freed.push(addrOfOrdinal(b.cidr, o));
      }
    }
    if (change.size > 0) moves.set(key, change);
  }
  const ops: Op[] = [{ type: 'delete', key: handleKey(handle) }];
  const blocks = new Map<string, Block | null>();
  if (kept.length === 0) {
    // The attachment holds nothing any more: dropping its record is all there is; the hold stays.
    return { kind: 'txn', compares: compares.filter((c) => c.key !== handleKey(hold)), ops, kept, freed: [], blocks, holdRecord: undefined };
  }
  for (const [key, change] of moves) {
    const b = input.state(key)!.block!;
    const allocations = new Map(b.allocations);
    for (const [o, h] of change) {
      if (h === undefined) allocations.delete(o);
      else allocations.set(o, h);
    }
    const q = input.quarantine(b.cidr);
    const next = stampReleases(b, { ...b, allocations }, q);
    if (isDisposable(next, q) && next.affinity === null) {
      ops.push({ type: 'delete', key });
      blocks.set(key, null);
    } else {
      ops.push({ type: 'put', key, value: encodeBlock(next) });
      blocks.set(key, next);
    }
  }
  const holdRecord: HandleRecord = { ...input.attrs, blocks: counts };
  ops.push({ type: 'put', key: handleKey(hold), value: encodeHandle(holdRecord) });
  return { kind: 'txn', compares, ops, kept, freed, blocks, holdRecord };
}
