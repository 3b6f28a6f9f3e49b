/** The agent's refusals to start (src/agent/agent-server.ts re-exports them). */

/** Refused to start: the message names the path and the reason. */
export class AgentStartError extends Error {
  override readonly name: string = 'AgentStartError';
}

/** The socket could not be listened on (the command exits 2, as for its other listener). */
export class AgentListenError extends AgentStartError {
  override readonly name = 'AgentListenError';
}
