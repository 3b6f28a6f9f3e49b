/**
 * A sticky pod's DEL in cluster mode: plan (sticky-hold-plan.ts, pure) → one compare-and-swap
 * txn → on a failed compare fold the current records and plan again. The attachment's handle
 * comes from the node's hints when this node wrote it (else one read, together with the
 * hold's); so a sticky DEL costs at most one read more than a plain one. Idempotent: a repeated
 * DEL finds the attachment's handle gone and returns undefined (the hold stays).
 */
import { commitWrite } from '../gate/index.js';
import { crashPoint } from '../../util/crash-point.js';
import type { Entry } from '../../store/index.js';
import { absorbEntry, type IpamContext, type KnownBlock, loadSnapshot, readKeys } from '../views/index.js';
import { decodeHandle, type HandleAttrs, handleKey, releaseStampOp, ContentionError, quarantineFor } from '../records/index.js';
import { checkHandle } from '../../model/handle-id.js';
import { checkNodeName } from '../../model/node-name.js';
import { type HandleState, planHold } from '../plan/index.js';
import type { Addr, Prefix } from '../../ip/index.js';
import type { Quarantine } from '../../alloc/block-quarantine.js';

export interface HoldResult {
  /** Addresses the hold now keeps for the pod. */
  readonly kept: readonly Addr[];
  /** Addresses of an earlier hold of the same pod, freed (replaced by `kept`). */
  readonly freed: readonly Addr[];
}

/**
 * Moves everything `handle` holds to the hold `hold` (record: `attrs`), in one transaction;
 * undefined when `handle` has no record (nothing to keep: the caller's DEL goes on as usual).
 * Throws ContentionError, StoreUnavailableError (repeating is safe), CorruptRecordError.
 */
export async function holdAttachment(
  ctx: IpamContext,
  handle: string,
  hold: string,
  attrs: HandleAttrs & { readonly stickyUntil: string },
  node: string,
): Promise<HoldResult | undefined> {
  checkHandle('handle', handle);
  checkHandle('hold handle', hold);
  checkNodeName('node name', node);
  const view = ctx.cache.node(node);
  const others = new Map<string, KnownBlock>();
  const states = new Map<string, HandleState>();
  const hinted = view.handles.get(handle);
  if (hinted) states.set(handle, hinted);
  const note = (h: string, entry: Entry | undefined): void => {
    states.set(h, entry ? { rev: entry.rev, record: decodeHandle(entry) } : { rev: 0, record: undefined });
  };
  let conflict: string[] = [];
  for (let attempt = 1; attempt <= ctx.maxAttempts; attempt++) {
    const unknown = [handle, hold].filter((h) => !states.has(h));
    if (unknown.length > 0) {
      for (const [key, entry] of await readKeys(ctx.store, unknown.map(handleKey))) note(key === handleKey(handle) ? handle : hold, entry);
    }
    const hs = states.get(handle)!;
    const record = hs.record;
    if (!record) {
      view.noteHandle(handle, 0, undefined);
      return undefined;
    }
    const snap = (ctx.cache.snapshot ??= await loadSnapshot(ctx.store));
    const now = ctx.now().getTime();
    const quarantine = (cidr: Prefix): Quarantine => quarantineFor(snap.pools, cidr, now);
    const plan = planHold({
      state: (k) => view.blocks.get(k) ?? others.get(k),
      handle,
      handleState: { rev: hs.rev, record },
      hold,
      holdState: states.get(hold)!,
      attrs,
      quarantine,
    });
    if (plan.kind === 'read') {
      for (const [key, entry] of await readKeys(ctx.store, plan.keys)) absorbEntry(ctx.cache, view, others, key, entry);
      continue;
    }
    const r = await commitWrite(ctx, {
      what: `keep the addresses of handle "${handle}" under "${hold}"`,
      compares: plan.compares,
      ops: [...plan.ops, releaseStampOp(ctx)],
    });
    if (r.succeeded) {
      crashPoint('cluster.sticky.held');
      for (const [key, block] of plan.blocks) {
        view.noteBlock(key, block ? r.rev : 0, block);
        if (!block || block.affinity !== node) others.set(key, { rev: block ? r.rev : 0, block });
      }
      view.noteHandle(handle, 0, undefined);
      if (plan.holdRecord) view.noteHandle(hold, r.rev, plan.holdRecord);
      return { kept: plan.kept, freed: plan.freed };
    }
    conflict = [];
    plan.compares.forEach((c, i) => {
      const entry = r.current?.[i];
      if ((entry?.rev ?? 0) !== c.rev) conflict.push(c.key);
      if (c.key === handleKey(handle)) note(handle, entry);
      else if (c.key === handleKey(hold)) note(hold, entry);
      else absorbEntry(ctx.cache, view, others, c.key, entry);
    });
  }
  throw new ContentionError(`keep the addresses of handle "${handle}" under "${hold}"`, ctx.maxAttempts, conflict);
}
