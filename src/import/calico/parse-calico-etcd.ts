/**
 * Calico's etcd v3 datastore: the key/value pairs under its prefix (default `/calico`), as
 * libcalico-go writes them — pure: pairs → CalicoState → ImportPlan (calico-plan.ts).
 *
 * - `<prefix>/ipam/v2/assignment/ipv4/block/10.244.0.0-26` (ipv6 likewise, "/" written "-"):
 *   the AllocationBlock JSON (cidr, affinity, allocations, unallocated, attributes, deleted).
 * - `<prefix>/ipam/v2/host/<node>/ipv4/block/10.244.0.0-26`: the node's affinity to the block,
 *   `{"state":"confirmed","deleted":false}`, or empty (old records: confirmed).
 *   (`<prefix>/ipam/v2/virtual/…` affinities are not a node's and are not read.)
 * - `<prefix>/ipam/v2/handle/<handleID>`: `{"block":{"10.244.0.0/26":1},"deleted":false}` —
 *   the id is the key's last segment.
 * - `<prefix>/resources/v3/projectcalico.org/ippools/<name>`: the IPPool resource
 *   (`{"kind":"IPPool","apiVersion":"projectcalico.org/v3","metadata":{…},"spec":{…}}`).
 *
 * CALICO_ETCD_PREFIXES are what the reader lists. A key under them of none of these shapes, a
 * value that is not such JSON, or a block whose key and cidr disagree is one 'invalid' conflict
 * naming the key.
 */
import { type Prefix, formatPrefix, parsePrefix } from '../../ip/index.js';
import type { ImportPlan } from '../import-plan.js';
import { type CalicoPlanOptions, planCalicoImport } from './calico-plan.js';
import {
  type CalicoAffinity,
  type CalicoBlock,
  type CalicoHandle,
  type CalicoPool,
  CalicoRecordError,
  type CalicoState,
  asObject,
  decodeCalicoAffinity,
  decodeCalicoBlock,
  decodeCalicoHandle,
  decodeCalicoPool,
} from './calico-records.js';

/** Calico's default etcd key prefix. */
export const CALICO_ETCD_DEFAULT_PREFIX = '/calico';

/** The key prefixes (below the Calico prefix) whose keys the importer reads. */
export const CALICO_ETCD_PREFIXES = ['/ipam/v2/assignment/', '/ipam/v2/host/', '/ipam/v2/handle/', '/resources/v3/projectcalico.org/ippools/'] as const;

export interface EtcdPair {
  readonly key: string;
  readonly value: string;
}

/** `10.244.0.0-26` → the prefix, or undefined. */
function keyCidr(segment: string): Prefix | undefined {
  try {
    return parsePrefix(segment.replace('-', '/'));
  } catch {
    return undefined;
  }
}

function json(key: string, value: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(value);
  } catch (e) {
    throw new CalicoRecordError(key, `the value is not JSON (${(e as Error).message})`, { cause: e });
  }
  return asObject(key, 'the value', v);
}

/** Decodes the pairs under `prefix` (no trailing "/"). */
export function readCalicoEtcd(pairs: readonly EtcdPair[], prefix: string = CALICO_ETCD_DEFAULT_PREFIX): CalicoState {
  const root = prefix.replace(/\/+$/, '');
  const pools: CalicoPool[] = [];
  const blocks: CalicoBlock[] = [];
  const affinities: CalicoAffinity[] = [];
  const handles: CalicoHandle[] = [];
  const malformed: CalicoRecordError[] = [];
  for (const { key, value } of pairs) {
    if (!key.startsWith(`${root}/`)) continue;
    const rest = key.slice(root.length);
    try {
      let m: RegExpExecArray | null;
      if ((m = /^\/ipam\/v2\/assignment\/ipv([46])\/block\/([^/]+)$/.exec(rest))) {
        const cidr = keyCidr(m[2]!);
        if (!cidr || `${cidr.family}` !== m[1]) throw new CalicoRecordError(key, `the key does not name an IPv${m[1]} block CIDR`);
        const b = decodeCalicoBlock(key, json(key, value), '');
        if (formatPrefix(b.cidr) !== formatPrefix(cidr)) throw new CalicoRecordError(key, `cidr ${formatPrefix(b.cidr)} does not match the key`);
        blocks.push(b);
      } else if ((m = /^\/ipam\/v2\/host\/([^/]+)\/ipv([46])\/block\/([^/]+)$/.exec(rest))) {
        const cidr = keyCidr(m[3]!);
        if (!cidr || `${cidr.family}` !== m[2]) throw new CalicoRecordError(key, `the key does not name an IPv${m[2]} block CIDR`);
        affinities.push(decodeCalicoAffinity(key, m[1]!, cidr, value.trim() === '' ? {} : json(key, value), ''));
      } else if ((m = /^\/ipam\/v2\/handle\/([^/]+)$/.exec(rest))) {
        handles.push(decodeCalicoHandle(key, m[1]!, json(key, value), ''));
      } else if ((m = /^\/resources\/v3\/projectcalico\.org\/ippools\/([^/]+)$/.exec(rest))) {
        const o = json(key, value);
        if (o.kind !== undefined && o.kind !== 'IPPool') throw new CalicoRecordError(key, `kind is ${JSON.stringify(o.kind)}, not "IPPool"`);
        pools.push(decodeCalicoPool(key, m[1]!, asObject(key, 'spec', o.spec)));
      } else if (CALICO_ETCD_PREFIXES.some((p) => rest.startsWith(p))) {
        throw new CalicoRecordError(key, 'not a Calico block, block affinity, handle or IP pool key');
      }
    } catch (e) {
      if (!(e instanceof CalicoRecordError)) throw e;
      malformed.push(e);
    }
  }
  return { pools, blocks, affinities, handles, malformed };
}

/** The plan of Calico's etcd pairs (see readCalicoEtcd and planCalicoImport). */
export function parseCalicoEtcd(pairs: readonly EtcdPair[], prefix?: string, options?: CalicoPlanOptions): ImportPlan {
  return planCalicoImport('calico-etcd', readCalicoEtcd(pairs, prefix), options);
}
