/**
 * Waiting for the node agents to apply an operator's change that takes addresses out of service
 * (`ipam reserve`, `pool drain`, `pool disable`, a pool's node selector): an agent serves an ADD
 * from its idle queue with no datastore round trip, so until its watch delivers the change it
 * may still hand one of those addresses to a pod. Only the agent can end that. It does at the
 * watch event: it withdraws them from its idle queue (and returns them), and its holder view
 * (`agent-views/<node>`, src/warm/warm-view-publisher.ts) goes out naming the config generation
 * it has applied (`configRev`). A view naming the change's generation or a later one is the
 * agent's answer: from then on it hands none of them to a new pod (a sticky reservation still
 * goes back to its own pod's next incarnation, as any allocation a pod holds stays its own).
 *
 * So the command waits, bounded, for that answer from every node whose warm handles hold an
 * address the change concerns, and says per node how it ended: answered (with, from its view,
 * the addresses pods still hold — they keep them until their DEL —, the ones cooling after a
 * DEL and the sticky reservations: the agent gives those back when their time ends), or not
 * answered by the deadline (the agent stopped, or cut off from the datastore): its idle ones
 * may still reach a pod until it does.
 *
 * `warmNodesIn` and `nodeAnswer` are pure; `awaitWarmAnswers` reads every block once to find the
 * nodes, then per poll only the views of the nodes still silent, and at the end the pod records
 * of those still silent (to name their idle addresses).
 */
import { addrOfOrdinal, type Block } from '../alloc/block.js';
import { type Addr, formatAddr, type Prefix, parseAddr, prefixContains, prefixOverlaps } from '../ip/index.js';
import {
  type AgentView,
  BLOCK_PREFIX,
  CONFIG_KEY,
  type Pool,
  agentViewKey,
  decodeAgentView,
  decodeBlock,
  poolSpace,
  poolUsable,
} from '../cluster/records/index.js';
import { NODE_PREFIX } from '../model/node-record.js';
import { selectorMatches } from '../model/node-selector.js';
import { labelsOf } from '../cluster/views/index.js';
import { tryDecodeWarmPodRecord, warmPodRecordPrefix } from '../model/warm-pod-record.js';
import type { Entry, Store } from '../store/index.js';
import { listAll } from '../store/list-all.js';
import { warmHandleNode } from './warm-handle.js';

/** Which addresses the change concerns: inside `space`, on the nodes `onNode` accepts (all when absent). */
export interface WarmScope {
  readonly space: readonly Prefix[];
  readonly onNode?: (node: string) => boolean;
}

/**
 * Whether a change of a pool's settings may take addresses out of service (so the agents'
 * answer is waited for): disabling it, or a new node selector. Block size and reuse quarantine
 * change nothing an agent already holds.
 */
export function takesOutOfService(settings: { readonly disabled?: boolean | undefined; readonly nodeSelector?: string | undefined }): boolean {
  return settings.disabled === true || settings.nodeSelector !== undefined;
}

/**
 * What a change of pool `p` (as written) takes out of service: all of its space when it serves
 * no node any more (draining, disabled, being deleted), else its space on the nodes its node
 * selector no longer selects (their `nodes/` labels, none without a record, as the agents read
 * them: one listing of the node records).
 */
export async function poolChangeScope(store: Store, p: Pool): Promise<WarmScope> {
  const space = [poolSpace(p)];
  if (!poolUsable(p)) return { space };
  const labels = new Map((await listAll(store, NODE_PREFIX)).map((e) => [e.key.slice(NODE_PREFIX.length), labelsOf(e.value)]));
  return { space, onNode: (node) => !selectorMatches(p.nodeSelector, labels.get(node) ?? {}) };
}

/** A node whose warm handles hold addresses the change concerns, as the first look found them. */
export interface WarmNode {
  readonly node: string;
  /** Held by its warm handles and named by none of its pod records (idle, cooling, or sticky). */
  readonly idle: readonly string[];
  /** Its last view names no config generation: an agent of a version that does not answer. */
  readonly oldAgent?: true;
}

/** A node agent's answer, from the view that named the change's generation. */
export interface WarmAnswer {
  readonly node: string;
  /** When the view was built (the agent's clock). */
  readonly at: string;
  /** Addresses in scope pods hold: they keep them until their DEL. */
  readonly inUse: readonly { readonly addr: string; readonly pod?: string; readonly attachment: string }[];
  /** Released by a pod, in their cooldown: given back when it ends. */
  readonly cooling: readonly string[];
  /** Kept for a sticky pod's next incarnation: given back when its window ends. */
  readonly sticky: readonly string[];
  /** Still idle in scope although the agent applied the change (none expected; listed if so). */
  readonly idle: readonly string[];
}

/** The nodes whose warm handles hold addresses of `blocks` in `scope`; `inUse(node, addr)`: a pod record of the node names it. */
export function warmNodesIn(blocks: readonly Block[], scope: WarmScope, inUse: (node: string, addr: string) => boolean): WarmNode[] {
  const nodes = new Map<string, string[]>();
  for (const b of blocks) {
    if (!scope.space.some((p) => prefixOverlaps(p, b.cidr))) continue;
    for (const [ordinal, handle] of b.allocations) {
      const node = warmHandleNode(handle);
      if (node === undefined || (scope.onNode !== undefined && !scope.onNode(node))) continue;
      const a: Addr = addrOfOrdinal(b.cidr, ordinal);
      if (!scope.space.some((p) => prefixContains(p, a))) continue;
      let idle = nodes.get(node);
      if (!idle) nodes.set(node, (idle = []));
      const text = formatAddr(a);
      if (!inUse(node, text)) idle.push(text);
    }
  }
  return [...nodes].map(([node, idle]) => ({ node, idle }));
}

/** The node's answer when `view` names generation `configRev` or a later one; undefined: not (yet). */
export function nodeAnswer(view: AgentView | undefined, configRev: number, space: readonly Prefix[]): WarmAnswer | undefined {
  if (view?.configRev === undefined || view.configRev < configRev) return undefined;
  const inSpace = (a: string): boolean => space.some((p) => prefixContains(p, parseAddr(a)));
  return {
    node: view.node,
    at: view.at,
    inUse: view.pods.flatMap((p) =>
      p.addrs.filter(inSpace).map((addr) => ({
        addr,
        attachment: p.key,
        ...(p.namespace !== undefined && p.name !== undefined ? { pod: `${p.namespace}/${p.name}` } : {}),
      })),
    ),
    cooling: view.cooling.filter(inSpace),
    sticky: view.sticky.map((s) => s.addr).filter(inSpace),
    idle: view.idle.filter(inSpace),
  };
}

/** The longest pause between two looks at the silent nodes' views (ms). */
export const MAX_POLL_MS = 1000;

export interface WarmWaitOptions {
  /** How long to wait for the agents (ms); 0: look once, do not wait. */
  readonly timeoutMs: number;
  /** The first pause between two looks (ms, default 100); each later one doubles, up to MAX_POLL_MS. */
  readonly pollMs?: number;
}

export interface WarmWaitResult {
  readonly answered: readonly (WarmAnswer & { readonly ms: number })[];
  /** Nodes with no answer by the deadline, with their idle addresses in scope (as read at the end). */
  readonly silent: readonly WarmNode[];
  /** Block records that do not decode (any space): whose warm addresses they hold is unknown, nobody was waited for on their account. */
  readonly unreadableBlocks: readonly string[];
}

/**
 * Finds the nodes whose warm handles hold addresses in `scope` and waits (at most `timeoutMs`)
 * for each agent's view naming config generation `configRev` (the change's) or a later one.
 */
export async function awaitWarmAnswers(store: Store, scope: WarmScope, configRev: number, o: WarmWaitOptions): Promise<WarmWaitResult> {
  const t0 = performance.now();
  const decoded = decodeBlocks(await listAll(store, BLOCK_PREFIX));
  const blocks = decoded.blocks.filter((b) => scope.space.some((p) => prefixOverlaps(p, b.cidr)));
  // Every warm address in scope, per node; which are idle is settled for the silent ones only, at the end.
  let silent: WarmNode[] = warmNodesIn(blocks, scope, () => false);
  const answered: (WarmAnswer & { ms: number })[] = [];
  const deadline = t0 + o.timeoutMs;
  // An agent answers within a pause or two of the change; one that has not is read less and less
  // often (its whole view each time), so a wait on many silent nodes stays a light load.
  // The pause that reaches the deadline is followed by the last look, whatever the clock says
  // then: a timer may fire a fraction of a millisecond early, and a look just before the
  // deadline was followed by more looks a millisecond apart.
  let pause = o.pollMs ?? 100;
  for (let first = true, last = false; silent.length > 0 && !last; first = false) {
    if (!first) {
      const left = deadline - performance.now();
      if (left <= 0) break;
      last = left <= pause;
      await new Promise((r) => setTimeout(r, Math.min(pause, left)));
      pause = Math.min(pause * 2, Math.max(MAX_POLL_MS, o.pollMs ?? 0));
    } else last = o.timeoutMs <= 0;
    const views = await store.getMany(silent.map((n) => agentViewKey(n.node)));
    const still: WarmNode[] = [];
    silent.forEach((n, i) => {
      const view = decodeView(views[i]);
      const a = nodeAnswer(view, configRev, scope.space);
      if (a) answered.push({ ...a, ms: performance.now() - t0 });
      // A view with no generation at all: an agent of a version that does not answer.
      else still.push(view !== undefined && view.configRev === undefined ? { ...n, oldAgent: true } : { node: n.node, idle: n.idle });
    });
    silent = still;
  }
  // The silent nodes' idle addresses: those no pod record of theirs names (one listing per silent node).
  for (let i = 0; i < silent.length; i++) {
    const n = silent[i]!;
    const used = new Set<string>();
    for (const e of await listAll(store, warmPodRecordPrefix(n.node))) {
      const r = tryDecodeWarmPodRecord(e.key, e.value);
      if (!(r instanceof Error)) for (const a of r.addrs) used.add(a);
    }
    silent[i] = { ...n, idle: n.idle.filter((a) => !used.has(a)) };
  }
  return { answered, silent, unreadableBlocks: decoded.unreadable };
}

/**
 * awaitWarmAnswers for a change that has just committed: the generation waited for is the
 * `config` record's as read now (the change's, or a later one's: waiting for that is as good).
 */
export async function awaitChangeApplied(store: Store, scope: WarmScope, o: WarmWaitOptions): Promise<WarmWaitResult> {
  const configRev = (await store.get(CONFIG_KEY))?.rev ?? 0;
  return awaitWarmAnswers(store, scope, configRev, o);
}

/** A view entry that decodes; a missing or corrupt one is no answer. */
function decodeView(e: Entry | undefined): AgentView | undefined {
  try {
    return e === undefined ? undefined : decodeAgentView(e);
  } catch {
    return undefined;
  }
}

/** The blocks that decode, and the keys of those that do not (`ipam check` reports them; their addresses are not looked at). */
function decodeBlocks(entries: readonly Entry[]): { blocks: Block[]; unreadable: string[] } {
  const blocks: Block[] = [];
  const unreadable: string[] = [];
  for (const e of entries) {
    try {
      blocks.push(decodeBlock(e));
    } catch {
      unreadable.push(e.key);
    }
  }
  return { blocks, unreadable };
}
