/**
 * The API's allocation listings: ClusterIpam's paged queries (src/cluster/views/allocations.ts),
 * their cursor errors as HTTP 400 naming "after".
 */
import { InvalidCursorError, type AllocationFilter, type AllocationPage, type ClusterIpam } from '../../cluster/index.js';
import { badField } from '../http/http-error.js';

export type { AllocationFilter, AllocationPage, AllocationRow } from '../../cluster/index.js';

/** One page of allocations matching the filter. HttpError 400 for a malformed cursor. */
export async function listAllocations(ipam: Pick<ClusterIpam, 'listAllocations'>, f: AllocationFilter): Promise<AllocationPage> {
  try {
    return await ipam.listAllocations(f);
  } catch (e) {
    if (e instanceof InvalidCursorError) throw badField(e.field, e.message);
    throw e;
  }
}
