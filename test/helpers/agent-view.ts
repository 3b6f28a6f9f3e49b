/** An agent holder view for tests: empty lists, not truncated, `over` on top. */
import type { AgentView } from '../../src/cluster/records/agent-view-record.js';

export function agentView(node: string, at: string, over: Partial<AgentView> = {}): AgentView {
  return { node, at, refreshMs: 10_000, pending: 0, idle: [], cooling: [], sticky: [], pods: [], truncated: false, ...over };
}
