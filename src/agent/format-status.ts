/** `podipam agent status` as text for people (the --json form is the agent's own JSON). */
import type { AgentStatus } from './agent-stats.js';

export function formatAgentStatus(s: AgentStatus): string {
  const lines = [
    `agent pid ${s.pid} on ${s.socket}, node ${s.node}, up ${s.uptimeSeconds}s, ${s.inFlight} in flight`,
    `back ends: ${Object.entries(s.backends).map(([b, n]) => `${b} ${n}`).join(', ') || 'none used yet'}`,
    `datastore: ${s.datastore.open.length} open, ${s.datastore.roundTrips} round trips, ${s.datastore.groupCommits} group commits carrying ${s.datastore.groupedAdds} ADDs`,
  ];
  for (const [verb, results] of Object.entries(s.requests)) {
    const l = s.latencyMs[verb];
    const counts = Object.entries(results).map(([r, n]) => `${r} ${n}`).join(', ');
    lines.push(`${verb.padEnd(7)} ${counts}${l ? `; p50 ${l.p50} ms, p90 ${l.p90} ms, p99 ${l.p99} ms, max ${l.max} ms (last ${l.n})` : ''}`);
  }
  return `${lines.join('\n')}\n`;
}
