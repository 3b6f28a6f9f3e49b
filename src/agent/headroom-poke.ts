/**
 * Whether a finished call resyncs the node's headroom at once (src/agent/headroom.ts): an ADD
 * that found the node exhausted (code 100) — a runtime's, never one of the warm-up's (its private
 * pools say nothing about the node's).
 */
export function pokesHeadroom(c: { readonly verb: string; readonly result: string }, warmUp: boolean): boolean {
  return c.verb === 'ADD' && c.result === 'code 100' && !warmUp;
}
