/**
 * `podipam agent status` reads the agent's status answer: whatever answered on the socket may
 * not be an agent (or not this version's), so the shape `format-status.ts` prints is checked
 * first, and anything else is an error naming the socket, never a crash in the formatter.
 */
import type { AgentStatus } from './agent-stats.js';

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const recordOf = (v: unknown, each: (x: unknown) => boolean): boolean => isRecord(v) && Object.values(v).every(each);

/** The status in `body`; throws an Error naming `socket` when it is not an agent status. */
export function parseAgentStatus(body: string, socket: string): AgentStatus {
  let v: unknown;
  try {
    v = JSON.parse(body);
  } catch {
    v = undefined;
  }
  const num = (x: unknown): boolean => typeof x === 'number';
  const ok =
    isRecord(v) &&
    num(v.pid) &&
    typeof v.node === 'string' &&
    typeof v.socket === 'string' &&
    num(v.uptimeSeconds) &&
    num(v.inFlight) &&
    recordOf(v.requests, (r) => recordOf(r, num)) &&
    recordOf(v.latencyMs, (l) => recordOf(l, num)) &&
    recordOf(v.backends, num) &&
    isRecord(v.datastore) &&
    Array.isArray(v.datastore.open) &&
    (v.podCache === undefined ||
      (isRecord(v.podCache) &&
        typeof v.podCache.synced === 'boolean' &&
        num(v.podCache.pods) &&
        num(v.podCache.namespaces) &&
        num(v.podCache.relists) &&
        num(v.podCache.resumes) &&
        num(v.podCache.events) &&
        num(v.podCache.errors))) &&
    (v.warmPool === undefined ||
      (isRecord(v.warmPool) && recordOf(v.warmPool.pools, isRecord) && (v.warmPool.pods === undefined || isRecord(v.warmPool.pods)))) &&
    (v.headroom === undefined || (isRecord(v.headroom) && recordOf(v.headroom.families, (f) => isRecord(f) && num(f.headroom)))) &&
    (v.masquerade === undefined || (isRecord(v.masquerade) && typeof v.masquerade.state === 'string' && Array.isArray(v.masquerade.families))) &&
    (v.runtimeReconcile === undefined ||
      (isRecord(v.runtimeReconcile) &&
        typeof v.runtimeReconcile.state === 'string' &&
        Array.isArray(v.runtimeReconcile.suspected) &&
        isRecord(v.runtimeReconcile.freed)));
  if (!ok) {
    const shown = body.length > 80 ? `${body.slice(0, 77)}...` : body;
    throw new Error(`${socket} answered ${JSON.stringify(shown)}, which is not an agent status (another program on the socket, or another podipam version?)`);
  }
  return v as AgentStatus;
}
