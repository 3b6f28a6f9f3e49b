/**
 * A Whereabouts state in the exact shape `kubectl get ippools.whereabouts.cni.cncf.io,
 * overlappingrangeipreservations.whereabouts.cni.cncf.io -A -o json` prints (a `List` of
 * IPPool and OverlappingRangeIPReservation objects with their metadata), built from a list of
 * pods: each pod's addresses become allocations keyed by their decimal offset from the range's
 * first address, and one reservation per address, named as Whereabouts names them.
 */
import { formatAddr, parseCidr, parseAddr } from '../../src/ip/index.js';

export interface WbPod {
  readonly containerId: string;
  readonly podref: string;
  /** Absent: written without ifname (older Whereabouts), which means eth0. */
  readonly ifname?: string;
  readonly ips: readonly string[];
}

export interface WbRange {
  readonly range: string;
  /** Whereabouts' network_name (the pool and reservation name prefix), if set. */
  readonly networkName?: string;
}

const API = 'whereabouts.cni.cncf.io/v1alpha1';

function norm(text: string): string {
  return (text.endsWith(':') ? `${text}0` : text).replaceAll(':', '-').replaceAll('/', '-');
}

function meta(name: string, i: number): Record<string, unknown> {
  return {
    creationTimestamp: '2026-11-30T10:00:00Z',
    generation: 3 + i,
    name,
    namespace: 'kube-system',
    resourceVersion: String(81234 + i),
    uid: `5f0c2a9e-0000-4000-8000-${String(i).padStart(12, '0')}`,
  };
}

/** The List document. `extraReservations`: more reservations (e.g. one naming another container). */
export function whereaboutsList(
  ranges: readonly WbRange[],
  pods: readonly WbPod[],
  extraReservations: readonly { name: string; spec: Record<string, string> }[] = [],
): unknown {
  const items: unknown[] = [];
  let i = 0;
  for (const r of ranges) {
    const { addr: first, len } = parseCidr(r.range);
    const allocations: Record<string, unknown> = {};
    for (const p of pods) {
      for (const ip of p.ips) {
        const a = parseAddr(ip);
        if (a.family !== first.family) continue;
        const off = a.value - first.value;
        const bits = a.family === 4 ? 32 : 128;
        if (off < 0n || off >= 1n << BigInt(bits - len)) continue;
        allocations[off.toString()] = { id: p.containerId, podref: p.podref, ...(p.ifname === undefined ? {} : { ifname: p.ifname }) };
      }
    }
    const name = `${r.networkName ? `${r.networkName}-` : ''}${norm(r.range)}`;
    items.push({ apiVersion: API, kind: 'IPPool', metadata: meta(name, i++), spec: { allocations, range: r.range } });
  }
  const prefix = ranges[0]?.networkName ? `${ranges[0].networkName}-` : '';
  for (const p of pods) {
    for (const ip of p.ips) {
      const name = `${prefix}${norm(formatAddr(parseAddr(ip)))}`;
      items.push({
        apiVersion: API,
        kind: 'OverlappingRangeIPReservation',
        metadata: meta(name, i++),
        spec: { containerid: p.containerId, ...(p.ifname === undefined ? {} : { ifname: p.ifname }), podref: p.podref },
      });
    }
  }
  for (const r of extraReservations) items.push({ apiVersion: API, kind: 'OverlappingRangeIPReservation', metadata: meta(r.name, i++), spec: r.spec });
  return { apiVersion: 'v1', items, kind: 'List', metadata: { resourceVersion: '' } };
}
