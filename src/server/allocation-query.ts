/**
 * The API's allocation listings: ClusterIpam's paged queries (src/cluster/allocations.ts),
 * their cursor errors as HTTP 400 naming "after".
 */
import { InvalidCursorError, type AllocationFilter, type AllocationPage } from '../cluster/index.js';
import type { ClusterOps } from './cluster-ops.js';
import { badField } from './http-error.js';

export type { AllocationFilter, AllocationPage, AllocationRow } from '../cluster/index.js';

/** One page of allocations matching the filter. HttpError 400 for a malformed cursor. */
export async function listAllocations(ops: Pick<ClusterOps, 'listAllocations'>, f: AllocationFilter): Promise<AllocationPage> {
  try {
    return await ops.listAllocations(f);
  } catch (e) {
    if (e instanceof InvalidCursorError) throw badField(e.field, e.message);
    throw e;
  }
}
