/**
 * A node agent's holder view (`agent-views/<node>`): what the agent's warm pool holds as it
 * sees it — idle addresses (past their cooldown), cooling ones (released, not yet handed out
 * again), sticky reservations, and the pods it serves from its warm handles with their
 * addresses. The agent publishes it (src/warm/warm-view-publisher.ts) when it changes, and
 * while it is unchanged vouches for it at least every `refreshMs` with its heartbeat
 * (`agent-beats/<node>`, agent-beat-record.ts), so `ipam check` on any machine can compare the
 * agent's holders with the datastore (check-holders.ts). Its entry's revision, or that of a
 * heartbeat naming it (src/cluster/reports/vouched-view.ts), is the datastore revision at which
 * the agent vouched for it; `pending` is the agent's write-behind queue depth when it was built.
 *
 * Bounded: at most MAX_VIEW_ADDRESSES addresses in all and MAX_VIEW_BYTES; beyond that the
 * lists are cut (pods first kept, then sticky, cooling, idle) and `truncated` is set — what was
 * cut is not checked.
 * Addresses are canonical text; the key is no allocator key, so it is written as a warm record.
 */
import { formatAddr, parseAddr } from '../../ip/index.js';
import type { Entry } from '../../store/index.js';
import { CorruptRecordError } from './errors.js';
import { bool, int, optStr, orCorrupt, parseRecord, str } from './record-json.js';

/** Datastore prefix of the agents' holder views. */
export const AGENT_VIEW_PREFIX = 'agent-views/';

/** Most addresses one view lists (all lists together): about 40 bytes each, well inside a datastore value. */
export const MAX_VIEW_ADDRESSES = 4096;

/** A pod the agent serves from its warm handles (a row of its resource DB). */
export interface AgentViewPod {
  /** The attachment key (`<network>:<containerID>:<ifname>`), that of its pod record. */
  readonly key: string;
  readonly containerId: string;
  readonly ifname: string;
  readonly namespace?: string | undefined;
  readonly name?: string | undefined;
  readonly addrs: readonly string[];
}

/** A sticky reservation: an address kept for a pod's next incarnation. */
export interface AgentViewSticky {
  readonly addr: string;
  readonly namespace?: string | undefined;
  readonly name?: string | undefined;
}

export interface AgentView {
  readonly node: string;
  /** When the agent built the view (ISO, the agent's clock). */
  readonly at: string;
  /** The agent publishes or vouches for its view (heartbeat) at least this often (ms): a view much older is stale. */
  readonly refreshMs: number;
  /** Pod record writes the agent had queued (write-behind) when it built the view. */
  readonly pending: number;
  readonly idle: readonly string[];
  readonly cooling: readonly string[];
  readonly sticky: readonly AgentViewSticky[];
  readonly pods: readonly AgentViewPod[];
  readonly truncated: boolean;
  /**
   * The config generation (the `config` record's revision: every pool, reservation and settings
   * write) whose pools and reservations the agent had applied when it built the view: from then
   * on it hands out no address they take out of service. Absent in views of earlier agents.
   */
  readonly configRev?: number | undefined;
}

export function agentViewKey(node: string): string {
  return AGENT_VIEW_PREFIX + node;
}

/** The node an agent view key names, or undefined. */
export function agentViewNode(key: string): string | undefined {
  const node = key.startsWith(AGENT_VIEW_PREFIX) ? key.slice(AGENT_VIEW_PREFIX.length) : '';
  return node !== '' && !node.includes('/') ? node : undefined;
}

/** Most bytes of one stored view (pods with long container ids make ~260 bytes each). */
export const MAX_VIEW_BYTES = 256 * 1024;

/** The view as stored: the lists cut to MAX_VIEW_ADDRESSES addresses in all (pods kept first) and to MAX_VIEW_BYTES. */
export function encodeAgentView(v: AgentView): string {
  for (let limit = MAX_VIEW_ADDRESSES; ; limit = Math.floor(limit / 2)) {
    const text = encodeWithin(v, limit);
    if (text.length <= MAX_VIEW_BYTES || limit === 0) return text;
  }
}

function encodeWithin(v: AgentView, limit: number): string {
  let room = limit;
  let truncated = v.truncated;
  const take = <T>(items: readonly T[], size: (t: T) => number): T[] => {
    const out: T[] = [];
    for (const t of items) {
      if (size(t) > room) {
        truncated = true;
        break;
      }
      room -= size(t);
      out.push(t);
    }
    return out;
  };
  const pods = take(v.pods, (p) => p.addrs.length);
  const sticky = take(v.sticky, () => 1);
  const cooling = take(v.cooling, () => 1);
  const idle = take(v.idle, () => 1);
  return JSON.stringify({
    node: v.node,
    at: v.at,
    refreshMs: v.refreshMs,
    pending: v.pending,
    idle,
    cooling,
    sticky,
    pods,
    truncated,
    ...(v.configRev !== undefined ? { configRev: v.configRev } : {}),
  });
}

/** Decodes a view; CorruptRecordError naming the key and field otherwise. */
export function decodeAgentView(e: Entry): AgentView {
  const o = parseRecord(e);
  const k = e.key;
  const node = str(k, o, 'node');
  if (agentViewNode(k) !== node) throw new CorruptRecordError(k, `field "node" is ${JSON.stringify(node)}, not the key's node`);
  const at = str(k, o, 'at');
  if (Number.isNaN(Date.parse(at))) throw new CorruptRecordError(k, `field "at" is ${JSON.stringify(at)}, not a time`);
  const addrs = (field: string, v: unknown): string[] => {
    if (!Array.isArray(v)) throw new CorruptRecordError(k, `field "${field}" is not a list`);
    return v.map((a) => orCorrupt(k, () => formatAddr(parseAddr(typeof a === 'string' ? a : JSON.stringify(a)))));
  };
  const list = (field: string): Record<string, unknown>[] => {
    const v = o[field];
    if (!Array.isArray(v) || v.some((x) => x === null || typeof x !== 'object' || Array.isArray(x)))
      throw new CorruptRecordError(k, `field "${field}" is not a list of objects`);
    return v as Record<string, unknown>[];
  };
  const sticky = list('sticky').map((s) => ({ addr: addrs('sticky', [s.addr])[0]!, namespace: optStr(k, s, 'namespace'), name: optStr(k, s, 'name') }));
  const pods = list('pods').map((p) => ({
    key: str(k, p, 'key'),
    containerId: str(k, p, 'containerId'),
    ifname: str(k, p, 'ifname'),
    namespace: optStr(k, p, 'namespace'),
    name: optStr(k, p, 'name'),
    addrs: addrs('pods.addrs', p.addrs),
  }));
  const idle = addrs('idle', o.idle);
  const cooling = addrs('cooling', o.cooling);
  if (idle.length + cooling.length + sticky.length + pods.reduce((n, p) => n + p.addrs.length, 0) > MAX_VIEW_ADDRESSES) {
    throw new CorruptRecordError(k, `lists more than ${MAX_VIEW_ADDRESSES} addresses`);
  }
  return {
    node,
    at,
    refreshMs: int(k, o, 'refreshMs', 1),
    pending: int(k, o, 'pending', 0),
    idle,
    cooling,
    sticky,
    pods,
    truncated: bool(k, o, 'truncated', false),
    ...(o.configRev !== undefined ? { configRev: int(k, o, 'configRev', 0) } : {}),
  };
}
