/**
 * Which container ids have an ADD or DEL running, and when one last began: what runtime
 * reconciliation must know of the calls this process serves. An allocation whose container id
 * has a call running is never freed, and its age counts from the later of its record and the
 * last call that began for the id (a repeated ADD of a sandbox being created restarts the grace,
 * whether or not it rewrote the record). `maxAgeMs`: touches older than that, of ids with no call
 * running, may be forgotten (checked at most every quarter of it) — forgetting one only makes
 * the allocation look like another version, which delays a release, never hastens one.
 */
export class CallTracker {
  readonly #now: () => number;
  readonly #maxAgeMs: number | undefined;
  readonly #busy = new Map<string, number>();
  readonly #touched = new Map<string, number>();
  /**
   * A double from the start (never pruned: -∞), as the times it takes: V8 changes an object's
   * hidden class when a small-integer field first takes a double, and code optimised for the one
   * throws itself away at the other.
   */
  #prunedAt = Number.NEGATIVE_INFINITY;

  constructor(now: () => number, maxAgeMs?: number) {
    this.#now = now;
    this.#maxAgeMs = maxAgeMs;
  }

  /** Marks a call of `containerId` running; the function returned ends it (call it once). */
  begin(containerId: string): () => void {
    const now = this.#now();
    this.#prune(now);
    this.#busy.set(containerId, (this.#busy.get(containerId) ?? 0) + 1);
    this.#touched.set(containerId, now);
    return () => {
      const n = (this.#busy.get(containerId) ?? 1) - 1;
      if (n === 0) this.#busy.delete(containerId);
      else this.#busy.set(containerId, n);
    };
  }

  /** Container ids with a call running now. */
  inFlight(): ReadonlySet<string> {
    return new Set(this.#busy.keys());
  }

  isBusy(containerId: string): boolean {
    return this.#busy.has(containerId);
  }

  /** When a call of `containerId` last began, if this process remembers one. */
  touchedAt(containerId: string): number | undefined {
    return this.#touched.get(containerId);
  }

  /** Forgets the touches of ids with no call running for which `keep` says no. */
  retain(keep: (containerId: string) => boolean): void {
    for (const id of this.#touched.keys()) if (!this.#busy.has(id) && !keep(id)) this.#touched.delete(id);
  }

  /** Touches remembered (for tests and status). */
  get size(): number {
    return this.#touched.size;
  }

  #prune(now: number): void {
    const max = this.#maxAgeMs;
    if (max === undefined || now - this.#prunedAt < max / 4) return;
    this.#prunedAt = now;
    for (const [id, at] of this.#touched) if (now - at > max && !this.#busy.has(id)) this.#touched.delete(id);
  }
}
