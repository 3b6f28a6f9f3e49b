/**
 * A history store filled through `apply`, as the follower fills it, with a story the readers'
 * tests ask about (times relative to T0 = 2026-03-01T10:00:00Z):
 *
 *   address A   web-1 (uid u1) [T0, T0+1h] del · free · web-2 (u2) from T0+2h, its end lost in the
 *               gap · web-3 (u3) from within the gap, still held
 *   gap         T0+3h .. T0+4h ("etcd compacted revisions 31-39")
 *   address B   web-1 again (uid u1b, a new incarnation) [T0+5h, T0+6h] cni-gc
 *   address C   an end with no start seen (held before history began): from unknown, until T0+7h release
 */
import type { HistoryDb, HoldStart } from '../../src/history/history-db.js';

export const T0 = Date.UTC(2026, 2, 1, 10, 0, 0);
export const H = 3_600_000;
export const M = 60_000;

export interface Story {
  readonly a: string;
  readonly b: string;
  readonly c: string;
}

export const DEFAULT_STORY: Story = { a: '10.244.0.5', b: '10.244.0.6', c: '10.244.0.7' };

const SOURCE = 'sqlite:/var/lib/podipam/podipam.db';

function start(address: string, handle: string, name: string, uid: string, cid: string, from: HoldStart['from'], node = 'node-a'): HoldStart {
  return {
    address,
    handle,
    pod: { namespace: 'shop', name, uid },
    containerId: cid,
    ifname: 'eth0',
    network: 'k8s-pod-network',
    node,
    pool: 'default-ipv4',
    block: '10.244.0.0/26',
    from,
  };
}

/** A container id as runtimes make them: 64 hex digits. */
export function cid(n: number): string {
  return n.toString(16).padStart(2, '0').repeat(32);
}

export function fillHistory(db: HistoryDb, s: Story = DEFAULT_STORY): void {
  const pos = (revision: number, at: number): { source: string; revision: number; at: number } => ({ source: SOURCE, revision, at });
  db.apply({ ends: [], starts: [start(s.a, `k8s-pod-network:${cid(1)}:eth0`, 'web-1', 'u1', cid(1), { at: T0 })], position: pos(10, T0) });
  db.apply({ ends: [{ address: s.a, handle: `k8s-pod-network:${cid(1)}:eth0`, until: { at: T0 + H }, why: 'del' }], starts: [], position: pos(20, T0 + H) });
  db.apply({ ends: [], starts: [start(s.a, `k8s-pod-network:${cid(2)}:eth0`, 'web-2', 'u2', cid(2), { at: T0 + 2 * H })], position: pos(30, T0 + 2 * H) });
  // The follower came back after a compaction: web-2's end and web-3's start lie somewhere in the gap.
  db.apply({
    ends: [{ address: s.a, handle: `k8s-pod-network:${cid(2)}:eth0`, until: { at: T0 + 4 * H, earliest: T0 + 3 * H }, why: 'unknown' }],
    starts: [start(s.a, `k8s-pod-network:${cid(3)}:eth0`, 'web-3', 'u3', cid(3), { at: T0 + 4 * H, earliest: T0 + 3 * H }, 'node-b')],
    gaps: [{ from: T0 + 3 * H, until: T0 + 4 * H, cause: 'etcd compacted revisions 31-39' }],
    position: pos(40, T0 + 4 * H),
  });
  db.apply({ ends: [], starts: [start(s.b, `k8s-pod-network:${cid(4)}:eth0`, 'web-1', 'u1b', cid(4), { at: T0 + 5 * H })], position: pos(50, T0 + 5 * H) });
  db.apply({
    ends: [{ address: s.b, handle: `k8s-pod-network:${cid(4)}:eth0`, until: { at: T0 + 6 * H }, why: 'cni-gc' }],
    starts: [],
    position: pos(60, T0 + 6 * H),
  });
  db.apply({ ends: [{ address: s.c, handle: 'old-handle', until: { at: T0 + 7 * H }, why: 'release' }], starts: [], position: pos(70, T0 + 7 * H) });
}
