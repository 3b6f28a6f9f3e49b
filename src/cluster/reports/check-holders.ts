/**
 * `ipam check`'s comparison of every holder (pure: records in, findings out). Holders of an
 * address: the datastore's blocks (the handle an ordinal names, with its handle record), each
 * node agent's pod records (`agent-pods/<node>/<attachment>`, written behind) and each agent's
 * holder view (`agent-views/<node>`, agent-view-record.ts: its idle, cooling and sticky
 * addresses and the pods it serves), with its heartbeat (`agent-beats/<node>`,
 * agent-beat-record.ts): while the view is unchanged the agent writes only the heartbeat, and a
 * heartbeat that vouches for the view (vouched-view.ts) lends it its revision and time below. Findings, each with the node, the address, and the pod
 * (namespace/name, container id) where one is named:
 * - `idle-held-elsewhere`: an idle, cooling or sticky address of node N's agent that a block
 *   gives to a handle other than N's warm handles — two holders;
 * - `idle-not-held`: such an address no block gives to anyone (free, or in no block): the
 *   datastore would hand it out again while the agent still would too;
 * - `pod-held-elsewhere`: an address of a pod N's agent serves (its view or its pod record)
 *   that a block gives to another handle — two holders;
 * - `pod-unbacked`: such an address no block gives to anyone, or given to a warm handle of N
 *   whose handle record is gone (release by handle would never free it);
 * - `double-holder`: two agent claims on one address — two pod records (of one node or two),
 *   two nodes' views, or a view's idle address that a pod record names.
 *
 * An agent's records lag the datastore (its view is published every few seconds, its pod
 * records written behind), so a disagreement counts only when it is settled: the node's view
 * is fresh (its `at`, or its heartbeat's, younger than `maxAgeMs`, default VIEW_STALE_FACTOR × its own refresh period +
 * VIEW_CLOCK_SLACK_MS), was built with an empty write-behind queue, and every record involved
 * (block, handle, pod record) was last written before the view (its revision, or its
 * heartbeat's, is higher). Any
 * other disagreement is listed in `stale` with the reason, never as a finding: an operator's
 * change that the agent has not answered yet, an agent that is down, a queue that had not
 * drained — except a claim on an address that nobody else holds (`idle-not-held`,
 * `pod-unbacked`) or that the same agent claims otherwise (its view and its newer pod record):
 * that is what the agent's own return, ADD or DEL looks like until its next view, and it is
 * left out. Re-running after the agent's next
 * refresh settles it either way.
 */
import { holderOf, ordinalOf, type Block } from '../../alloc/block.js';
import { type Addr, formatAddr, formatPrefix, prefixOf, tryParseAddr } from '../../ip/index.js';
import { cniHandleId } from '../../model/handle-id.js';
import { WARM_NETWORK } from '../../model/reserved-network.js';
import { tryDecodeWarmPodRecord } from '../../model/warm-pod-record.js';
import type { Entry } from '../../store/index.js';
import { vouchedView } from './vouched-view.js';
import {
  AGENT_BEAT_PREFIX,
  AGENT_VIEW_PREFIX,
  agentBeatNode,
  decodeAgentBeat,
  type AgentView,
  agentViewNode,
  decodeAgentView,
  decodeBlock,
  decodeHandle,
  type HandleRecord,
  HANDLE_PREFIX,
  blockKey,
  handleKey,
} from '../records/index.js';

/** A view older than this many of its own refresh periods (plus the slack) is stale. */
export const VIEW_STALE_FACTOR = 3;
/** Allowance for the clocks of the agent and of the machine running the check. */
export const VIEW_CLOCK_SLACK_MS = 10_000;

export type HolderFindingKind = 'idle-held-elsewhere' | 'idle-not-held' | 'pod-held-elsewhere' | 'pod-unbacked' | 'double-holder';

/** One claim on an address: an agent's (idle, cooling, sticky, pod) or the datastore's (handle). */
export interface Claim {
  readonly node?: string | undefined;
  /** idle | cooling | sticky | pod: the agent's; handle: a block's. */
  readonly as: 'idle' | 'cooling' | 'sticky' | 'pod' | 'handle';
  /** namespace/name, when named. */
  readonly pod?: string | undefined;
  readonly containerId?: string | undefined;
  /** The attachment key (a pod) or the handle (a block's holder). */
  readonly holder?: string | undefined;
  /** Where the claim was read: agent-view, pod-record, block. */
  readonly from: readonly ('agent-view' | 'pod-record' | 'block')[];
}

export interface HolderFinding {
  readonly kind: HolderFindingKind;
  readonly address: string;
  /** The agent's claim (node, pod, container id). */
  readonly node: string;
  readonly claim: Claim;
  /** The other holder (a block's handle, another agent claim); absent when nobody else holds it. */
  readonly other?: Claim;
  readonly message: string;
  /** The records the finding was read from (re-read to confirm it). */
  readonly keys: readonly string[];
}

/** A disagreement not settled yet (see the module comment): not a finding. */
export interface StaleHolder {
  readonly node: string;
  readonly address: string;
  readonly kind: HolderFindingKind;
  readonly reason: string;
}

export interface HolderInput {
  readonly blocks: readonly Entry[];
  readonly handles: readonly Entry[];
  readonly podRecords: readonly Entry[];
  readonly views: readonly Entry[];
  /** The agents' heartbeats (`agent-beats/<node>`); none: every view stands on its own revision. */
  readonly beats?: readonly Entry[] | undefined;
  /** Now, ms since the epoch (the check's clock). */
  readonly now: number;
  /** Overrides each view's own staleness bound. */
  readonly maxAgeMs?: number | undefined;
}

export interface HolderReport {
  readonly findings: readonly HolderFinding[];
  readonly stale: readonly StaleHolder[];
}

interface Located {
  readonly addr: Addr;
  readonly block?: { readonly key: string; readonly rev: number; readonly block: Block };
  readonly handle?: string;
  readonly record?: { readonly rev: number; readonly record: HandleRecord };
}

/** A node's view with the revision and time it stands on (its own, or its heartbeat's: vouched-view.ts). */
interface StandingView {
  readonly view: AgentView;
  readonly rev: number;
  readonly at: string;
  /** The view's key, and the heartbeat's when it vouches: what a finding is re-read from. */
  readonly keys: readonly { readonly key: string; readonly rev: number }[];
}

interface AgentClaim {
  readonly claim: Claim & { readonly node: string };
  readonly addr: Addr;
  /** Keys the claim was read from, with their revisions. */
  readonly keys: readonly { readonly key: string; readonly rev: number }[];
}

/** Compares every holder; see the module comment. Records that do not decode are skipped (the datastore scan reports them). */
export function checkHolders(input: HolderInput): HolderReport {
  const locate = blockIndex(input.blocks, handleIndex(input.handles));
  const beats = new Map<string, { rev: number; viewRev: number; at: string; key: string }>();
  for (const e of input.beats ?? []) {
    const node = agentBeatNode(e.key);
    const beat = node === undefined ? undefined : tryDecode(() => decodeAgentBeat(e));
    if (node !== undefined && beat) beats.set(node, { ...beat, rev: e.rev, key: e.key });
  }
  const views = new Map<string, StandingView>();
  for (const e of input.views) {
    const node = agentViewNode(e.key);
    const view = node === undefined ? undefined : tryDecode(() => decodeAgentView(e));
    if (!view) continue;
    const beat = beats.get(view.node);
    const stands = vouchedView({ rev: e.rev, at: view.at }, beat);
    const keys = [{ key: e.key, rev: e.rev }, ...(stands.by === 'beat' && beat ? [{ key: beat.key, rev: beat.rev }] : [])];
    views.set(view.node, { view, rev: stands.rev, at: stands.at, keys });
  }
  const findings: HolderFinding[] = [];
  const stale: StaleHolder[] = [];
  /** Why a disagreement about records `keys` read for `nodes` is not settled, or undefined when it is. */
  const unsettled = (nodes: readonly string[], keys: readonly { key: string; rev: number }[]): string | undefined => {
    for (const node of nodes) {
      const v = views.get(node);
      if (!v) return `node "${node}" has published no holder view (its agent is not running, or predates them)`;
      const age = input.now - Date.parse(v.at);
      const max = input.maxAgeMs ?? VIEW_STALE_FACTOR * v.view.refreshMs + VIEW_CLOCK_SLACK_MS;
      if (age > max)
        return `node "${node}"'s holder view is ${Math.round(age / 1000)} s old (more than ${Math.round(max / 1000)} s): its agent is down or cannot reach the datastore`;
      if (v.view.pending > 0) return `node "${node}"'s agent had ${v.view.pending} pod record write(s) queued when it built its view`;
      const later = keys.find((k) => !k.key.startsWith(AGENT_VIEW_PREFIX) && !k.key.startsWith(AGENT_BEAT_PREFIX) && k.rev >= v.rev);
      if (later) return `${later.key} changed after node "${node}"'s holder view (revision ${later.rev} ≥ ${v.rev}): its agent has not answered it yet`;
    }
    return undefined;
  };
  const report = (
    kind: HolderFindingKind,
    c: AgentClaim,
    other: Claim | undefined,
    message: string,
    extra: readonly { key: string; rev: number }[],
    nodes: readonly string[],
  ): void => {
    const keys = [...c.keys, ...extra];
    const why = unsettled(nodes, keys);
    const address = formatAddr(c.addr);
    // An address no one holds any more after the view is what the agent's own return (of an idle
    // address, or of a gone pod's) looks like until its next view: not listed; once the view is
    // newer, it is a finding if the agent still claims it.
    if (why !== undefined) {
      // Likewise two claims of one node's agent (its view, its newer pod record): its own ADD or DEL since.
      if (other !== undefined && (other.as === 'handle' || other.node !== c.claim.node)) stale.push({ node: c.claim.node, address, kind, reason: why });
    } else
      findings.push({ kind, address, node: c.claim.node, claim: c.claim, ...(other ? { other } : {}), message, keys: [...new Set(keys.map((k) => k.key))] });
  };

  const claims = agentClaims(views, input.podRecords);
  for (const c of claims) {
    const at = locate(c.addr);
    const node = c.claim.node;
    const warmPrefix = cniHandleId(WARM_NETWORK, node, '');
    const dsKeys = [
      ...(at.block ? [{ key: at.block.key, rev: at.block.rev }] : []),
      ...(at.handle ? [{ key: handleKey(at.handle), rev: at.record?.rev ?? 0 }] : []),
    ];
    const who = describe(c.claim);
    const idle = c.claim.as !== 'pod';
    if (at.handle === undefined) {
      const where = at.block ? `block ${formatPrefix(at.block.block.cidr)} gives it to no one` : 'no block holds it';
      report(
        idle ? 'idle-not-held' : 'pod-unbacked',
        c,
        undefined,
        `${formatAddr(c.addr)} is ${who}, but ${where}: the datastore may hand it out again`,
        dsKeys,
        [node],
      );
    } else if (!at.handle.startsWith(warmPrefix)) {
      const other = blockClaim(at);
      report(
        idle ? 'idle-held-elsewhere' : 'pod-held-elsewhere',
        c,
        other,
        `${formatAddr(c.addr)} is ${who}, and block ${formatPrefix(at.block!.block.cidr)} gives it to ${describe(other)}`,
        dsKeys,
        [node],
      );
    } else if (!idle && at.record === undefined) {
      report(
        'pod-unbacked',
        c,
        undefined,
        `${formatAddr(c.addr)} is ${who}, but its warm handle "${at.handle}" has no record (a release by handle would never free it)`,
        dsKeys,
        [node],
      );
    }
  }
  // Two agent claims on one address (one pod's view row and its pod record are one claim).
  const byAddr = new Map<string, AgentClaim[]>();
  for (const c of claims) {
    const a = formatAddr(c.addr);
    byAddr.set(a, [...(byAddr.get(a) ?? []), c]);
  }
  for (const [, list] of byAddr) {
    const [first, ...rest] = list;
    for (const c of rest) {
      const keys = c.keys;
      report('double-holder', first!, c.claim, `${formatAddr(c.addr)} is ${describe(first!.claim)}, and also ${describe(c.claim)}`, keys, [
        ...new Set([first!.claim.node, c.claim.node]),
      ]);
    }
  }
  return { findings, stale };
}

/** The agents' claims: each view's idle, cooling, sticky and pod addresses and each pod record's, a pod's view row and record merged. */
function agentClaims(views: ReadonlyMap<string, StandingView>, podRecords: readonly Entry[]): AgentClaim[] {
  const out = new Map<string, AgentClaim>();
  const add = (id: string, c: AgentClaim): void => {
    const had = out.get(id);
    out.set(id, had ? { ...had, claim: { ...had.claim, from: [...had.claim.from, ...c.claim.from] }, keys: [...had.keys, ...c.keys] } : c);
  };
  for (const [node, { view, keys }] of views) {
    const pool = (as: 'idle' | 'cooling' | 'sticky', text: string, pod?: string): void => {
      const addr = tryParseAddr(text);
      if (addr) add(`${node}\0pool\0${text}`, { claim: { node, as, ...(pod ? { pod } : {}), from: ['agent-view'] }, addr, keys });
    };
    for (const a of view.idle) pool('idle', a);
    for (const a of view.cooling) pool('cooling', a);
    for (const s of view.sticky) pool('sticky', s.addr, podName(s.namespace, s.name));
    for (const p of view.pods) {
      for (const text of p.addrs) {
        const addr = tryParseAddr(text);
        const claim: Claim & { node: string } = {
          node,
          as: 'pod',
          pod: podName(p.namespace, p.name),
          containerId: p.containerId,
          holder: p.key,
          from: ['agent-view'],
        };
        if (addr) add(`${node}\0${p.key}\0${formatAddr(addr)}`, { claim, addr, keys });
      }
    }
  }
  for (const e of podRecords) {
    const r = tryDecodeWarmPodRecord(e.key, e.value);
    if (r instanceof Error) continue;
    for (const text of r.addrs) {
      const addr = tryParseAddr(text);
      if (!addr) continue;
      const claim: Claim & { node: string } = {
        node: r.node,
        as: 'pod',
        pod: podName(r.namespace, r.name),
        containerId: r.containerId,
        holder: r.attachment,
        from: ['pod-record'],
      };
      add(`${r.node}\0${r.attachment}\0${formatAddr(addr)}`, { claim, addr, keys: [{ key: e.key, rev: e.rev }] });
    }
  }
  return [...out.values()];
}

function handleIndex(entries: readonly Entry[]): Map<string, { rev: number; record: HandleRecord }> {
  const out = new Map<string, { rev: number; record: HandleRecord }>();
  for (const e of entries) {
    const record = tryDecode(() => decodeHandle(e));
    if (record) out.set(e.key.slice(HANDLE_PREFIX.length), { rev: e.rev, record });
  }
  return out;
}

/** Finds the block holding an address: one map lookup per block length in use. */
function blockIndex(entries: readonly Entry[], handles: ReadonlyMap<string, { rev: number; record: HandleRecord }>): (a: Addr) => Located {
  const byKey = new Map<string, { key: string; rev: number; block: Block }>();
  const lens = new Map<number, Set<number>>();
  for (const e of entries) {
    const block = tryDecode(() => decodeBlock(e));
    if (!block) continue;
    byKey.set(blockKey(block.cidr), { key: e.key, rev: e.rev, block });
    lens.set(block.cidr.family, (lens.get(block.cidr.family) ?? new Set()).add(block.cidr.len));
  }
  return (addr) => {
    for (const len of lens.get(addr.family) ?? []) {
      const b = byKey.get(blockKey(prefixOf(addr, len)));
      if (!b) continue;
      const handle = holderOf(b.block, ordinalOf(b.block.cidr, addr));
      const record = handle === undefined ? undefined : handles.get(handle);
      return { addr, block: b, ...(handle !== undefined ? { handle } : {}), ...(record ? { record } : {}) };
    }
    return { addr };
  };
}

function blockClaim(at: Located): Claim {
  const r = at.record?.record;
  return { node: r?.node, as: 'handle', pod: podName(r?.namespace, r?.pod), containerId: r?.containerId, holder: at.handle, from: ['block'] };
}

function describe(c: Claim): string {
  // Quoted: names read from records may hold anything, control characters included.
  const pod = c.pod !== undefined ? ` pod ${JSON.stringify(c.pod)}` : '';
  const ctr = c.containerId !== undefined ? ` (container ${JSON.stringify(c.containerId)})` : '';
  switch (c.as) {
    case 'handle':
      return `handle "${c.holder}"${c.node !== undefined ? ` of node "${c.node}"` : ''}${pod}${ctr}`;
    case 'pod':
      return `held by node "${c.node}"'s${pod || ` attachment ${JSON.stringify(c.holder)}`}${ctr} (${c.from.join(', ')})`;
    default:
      return `${c.as} in node "${c.node}"'s warm pool${c.as === 'sticky' && c.pod !== undefined ? ` (kept for${pod})` : ''}`;
  }
}

function podName(namespace: string | undefined, name: string | undefined): string | undefined {
  return namespace !== undefined && name !== undefined ? `${namespace}/${name}` : undefined;
}

function tryDecode<T>(fn: () => T): T | undefined {
  try {
    return fn();
  } catch {
    return undefined;
  }
}
