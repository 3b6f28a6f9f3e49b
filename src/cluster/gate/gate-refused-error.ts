/**
 * A write the gate (write-gate.ts) refused before sending it: it would make two blocks overlap,
 * two pools' spaces overlap, leave a block outside every pool, give a block a size its pool does
 * not list, or write a guarded key without comparing it. Nothing was written. Carries the key the
 * refusal is about and, for an overlap, what it overlaps — so callers can answer in their own
 * terms (a pool create's conflict, a resize's refusal, an import's conflict) with this as `cause`.
 */
export type GateRefusal = 'pool-overlap' | 'block-overlap' | 'outside-pools' | 'block-size' | 'uncompared' | 'deleting';

export class GateRefusedError extends Error {
  override readonly name = 'GateRefusedError';
  constructor(
    /** What was being written, as the caller named it ("create pool \"q\""). */
    readonly what: string,
    readonly reason: GateRefusal,
    /** The datastore key refused (a block or pool key). */
    readonly key: string,
    /** Why, in words naming the other party (a pool and its space, a block). */
    readonly detail: string,
    /** The pool (name) or block (key) in the way, when there is one. */
    readonly other?: string,
  ) {
    super(`${what}: refused: ${detail}`);
  }
}
