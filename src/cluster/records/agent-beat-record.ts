/**
 * A node agent's heartbeat (`agent-beats/<node>` → `{viewRev, at}`): the agent's word that its
 * holder view (`agent-views/<node>`, agent-view-record.ts) is still what its warm pool holds,
 * without writing the whole view again. `viewRev` is the datastore revision of the txn that
 * wrote the view the agent vouches for; `at` is when it vouched (ISO, the agent's clock). The
 * agent writes it instead of re-publishing an unchanged view every refresh period
 * (src/warm/warm-view-publisher.ts): some 60 bytes in place of up to ~57 KB. A check counts
 * it only while it names the view entry's current revision and was written after it
 * (src/cluster/reports/vouched-view.ts). Written as a warm record, in the agent's fenced txn.
 */
import type { Entry } from '../../store/index.js';
import { CorruptRecordError } from './errors.js';
import { int, parseRecord, str } from './record-json.js';

/** Datastore prefix of the agents' heartbeats. */
export const AGENT_BEAT_PREFIX = 'agent-beats/';

export interface AgentBeat {
  /** Revision of the txn that wrote the view the agent vouches for. */
  readonly viewRev: number;
  /** When the agent vouched (ISO, the agent's clock). */
  readonly at: string;
}

export function agentBeatKey(node: string): string {
  return AGENT_BEAT_PREFIX + node;
}

/** The node a heartbeat key names, or undefined. */
export function agentBeatNode(key: string): string | undefined {
  const node = key.startsWith(AGENT_BEAT_PREFIX) ? key.slice(AGENT_BEAT_PREFIX.length) : '';
  return node !== '' && !node.includes('/') ? node : undefined;
}

export function encodeAgentBeat(b: AgentBeat): string {
  return JSON.stringify({ viewRev: b.viewRev, at: b.at });
}

/** Decodes a heartbeat; CorruptRecordError naming the key and field otherwise. */
export function decodeAgentBeat(e: Entry): AgentBeat {
  const k = e.key;
  if (agentBeatNode(k) === undefined) throw new CorruptRecordError(k, 'not an agent heartbeat key (agent-beats/<node>)');
  const o = parseRecord(e);
  const viewRev = int(k, o, 'viewRev', 1);
  const at = str(k, o, 'at');
  if (Number.isNaN(Date.parse(at))) throw new CorruptRecordError(k, `field "at" is ${JSON.stringify(at)}, not a time`);
  return { viewRev, at };
}
