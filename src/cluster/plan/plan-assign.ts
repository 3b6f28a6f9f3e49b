/**
 * Plans one assignment as ONE datastore transaction, purely: from a cluster snapshot and the
 * blocks known so far, it either asks for more knowledge (`read` some keys, `list-claimed`
 * block CIDRs, the next page of `list-blocks` with their contents) or
 * returns the compares and writes that, applied atomically, give a handle its addresses —
 * every family, new blocks claimed and the handle record updated together, so a dual-stack
 * request is all-or-nothing without any undo, and a crash can never separate a block from
 * its handle. The compares cover every record the plan was derived from (config/generation,
 * node labels when a selector used them, each block, the handle), so the transaction succeeds
 * only if the plan's view of the world was current.
 *
 * Reuse quarantine (src/alloc/block-quarantine.ts): no address of a pool with `reuseAfter` is
 * handed out — automatically, from an ip-set or as a requested address — while its block says
 * it was released less than that long ago; the block is compared, so the plan saw its current
 * release times. A takeover of a sticky hold hands out nothing new (the hold kept the address).
 * Every block the plan writes drops the release entries whose quarantine is over.
 */
import { addrOfOrdinal, ordinalsOf } from '../../alloc/block.js';
import { formatAddr, parsePrefix } from '../../ip/index.js';
import { blockKey, AddressUnavailableError } from '../records/index.js';
import type { AssignPlan, PlanInput } from './assign-plan.js';
import { assignAuto } from './assign-auto.js';
import { assignFromSet } from './assign-from-set.js';
import { assignSpecific } from './assign-specific.js';
import { buildAssignTxn } from './build-assign-txn.js';
import { NeedList, NeedRead, PlanWork } from './plan-work.js';
import { takeOverHold } from './take-over-hold.js';

export type { AssignPlan, PlanInput } from './assign-plan.js';
export { MAX_CLAIM_MISSES } from './assign-auto.js';

/**
 * Plans `input.req`. Throws PoolExhaustedError, NoPoolError or AddressUnavailableError (with
 * their data) when the request cannot be met from the current knowledge — the caller's txn
 * loop only calls it again after the knowledge changed.
 */
export function planAssign(input: PlanInput): AssignPlan {
  try {
    return plan(new PlanWork(input));
  } catch (e) {
    if (e instanceof NeedRead) return { kind: 'read', keys: e.keys };
    if (e instanceof NeedList) return e.what === 'list-blocks' ? { kind: e.what, from: e.from ?? '' } : { kind: e.what };
    throw e;
  }
}

/** The parts in order, each adding to `w`; any may throw NeedRead/NeedList or an error for the caller. */
function plan(w: PlanWork): AssignPlan {
  collectHeld(w);
  if (w.input.req.attachment && w.held.length > 0) return repeated(w);
  takeOverHold(w);
  assignSpecific(w);
  assignFromSet(w);
  assignAuto(w);
  return buildAssignTxn(w);
}

/** Addresses the handle already holds (a repeated ADD returns them). */
function collectHeld(w: PlanWork): void {
  const { record } = w.input.handle;
  if (!record) return;
  const keys = [...record.blocks.keys()].map((c) => blockKey(parsePrefix(c)));
  const missing = keys.filter((k) => w.state(k) === undefined);
  if (missing.length > 0) throw new NeedRead(missing);
  for (const key of keys) {
    const st = w.state(key)!;
    w.verify.set(key, st.rev);
    if (st.block) for (const o of ordinalsOf(st.block, w.input.req.handle)) w.held.push(w.assignment(addrOfOrdinal(st.block.cidr, o), st.block.cidr));
  }
}

/** A repeated ADD of an attachment that holds addresses: those, unless it asks for one it does not hold. */
function repeated(w: PlanWork): AssignPlan {
  const { req } = w.input;
  const missing = (req.ips ?? []).find((ip) => !w.holds(ip));
  if (missing !== undefined) {
    const holds = w.held.map((a) => formatAddr(a.addr)).join(', ');
    throw new AddressUnavailableError(
      formatAddr(missing),
      'attachment-holds',
      `this attachment (handle "${req.handle}") already holds ${holds} from its earlier ADD; a repeated ADD returns what it holds and cannot change it (DEL the attachment first)`,
      req.handle,
    );
  }
  return buildAssignTxn(w);
}
