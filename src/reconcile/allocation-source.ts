/**
 * Where runtime reconciliation finds this node's allocations and how it frees one: one source
 * per back end holding them (local: host-local directories; cluster: the node's handle
 * records; warm: the agent's pod records). A source lists what it holds now and frees one
 * allocation through that back end's own release path, only while the allocation is still the
 * one listed; it never decides anything itself.
 */
import type { AbsenceEvidence, NodeAllocation } from './plan-runtime-reconcile.js';

/** One allocation, as a source lists it. */
export interface SourcedAllocation extends NodeAllocation {
  /** The source's name (e.g. "local /var/lib/cni/networks", "cluster sqlite:/…"). */
  readonly source: string;
  readonly network: string;
  /** The addresses it holds (text), for logs and reports. */
  readonly addresses: readonly string[];
}

export interface AllocationSource {
  readonly name: string;
  /** What it holds now; rejects when it cannot tell (then nothing of it is judged this pass). */
  list(): Promise<SourcedAllocation[]>;
  /** Frees `a` if it is still as listed: the addresses freed (none: it changed meanwhile). */
  release(a: SourcedAllocation, evidence: AbsenceEvidence): Promise<readonly string[]>;
}
