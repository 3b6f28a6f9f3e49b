/**
 * The warm pool's allocations (src/warm): the resource DB's pod rows — attachments the idle
 * queue served, each made at the later of its ADD (`since`) and the last ADD or DEL of its
 * container id this agent began (a repeated ADD of an old row starts the grace again) — freed through the warm service's own release
 * (WarmService.releaseAsListed): as a DEL would, so the addresses go back to the idle queue after
 * the cooldown and the pod record's delete follows through the write-behind, stamped
 * `runtime-absent` with the evidence in the history; only while the row is the one listed and
 * no ADD or DEL of that container id ran since the earlier answer. Attachments the warm pool
 * allocated directly on the datastore (annotated pods) are handle records of the node: the
 * cluster source judges them.
 */
import type { WarmService } from '../warm/warm-service.js';
import type { AllocationSource, SourcedAllocation } from './allocation-source.js';

interface WarmAllocation extends SourcedAllocation {
  readonly key: string;
  readonly rowSince: number;
  readonly touchedAt?: number;
}

/** The source of `warm` (named after its datastore, `name`). */
export function warmAllocations(name: string, warm: Pick<WarmService, 'podRows' | 'releaseAsListed'>): AllocationSource {
  const source = `warm ${name}`;
  return {
    name: source,
    list: async () =>
      (await warm.podRows()).map((p): WarmAllocation => ({
        id: `${source}|${p.key}|${p.since}|${p.touchedAt ?? ''}`,
        source,
        network: p.network,
        containerId: p.containerId,
        ifname: p.ifname,
        since: Math.max(p.since, p.touchedAt ?? p.since),
        addresses: p.addrs,
        key: p.key,
        rowSince: p.since,
        ...(p.touchedAt === undefined ? {} : { touchedAt: p.touchedAt }),
      })),
    release: (a, evidence) => {
      const w = a as WarmAllocation;
      return Promise.resolve(
        warm.releaseAsListed(
          { key: w.key, containerId: w.containerId, since: w.rowSince, ...(w.touchedAt === undefined ? {} : { touchedAt: w.touchedAt }) },
          evidence,
        ),
      );
    },
  };
}
