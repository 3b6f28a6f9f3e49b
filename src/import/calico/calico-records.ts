/**
 * Calico's IPAM records, as both of its datastores hold them, decoded into one shape the
 * planner (calico-plan.ts) reads. The field names are Calico's own (libcalico-go):
 *
 * - IPPool spec (projectcalico.org/v3 IPPoolSpec): `cidr`, `blockSize` (0 or absent: 26 / 122),
 *   `nodeSelector`, `disabled`; ipipMode, vxlanMode, natOutgoing, namespaceSelector,
 *   allowedUses, assignmentMode are not IPAM state and are not read.
 * - Allocation block (AllocationBlock / IPAMBlockSpec): `cidr`, `affinity` ("host:<node>",
 *   "virtual:<name>" or null; the deprecated `hostAffinity: <node>` of old blocks is read when
 *   `affinity` is absent), `allocations` (index = ordinal in the block; value = index into
 *   `attributes`, or null when free), `unallocated`, `attributes[]` (`handle_id`, `secondary`:
 *   the owner's `namespace`, `pod`, `node`, `type`, `timestamp`; `releasedAt` while an address
 *   cools down after its release), `deleted`, `strictAffinity` (deprecated, not read).
 * - Block affinity (BlockAffinitySpec / model.BlockAffinity): `node`, `cidr`, `state`
 *   ("confirmed", "pending", "pendingDeletion"; empty in old etcd records = confirmed),
 *   `deleted` (a string "true"/"false" in the CRD, a boolean in etcd).
 * - Handle (IPAMHandleSpec / model.IPAMHandle): `handleID` (in etcd: the key), `block`
 *   (block CIDR → count), `deleted`.
 *
 * Each decoder takes the parsed JSON object and a `source` naming the record for messages
 * (`ipamblocks.crd.projectcalico.org 10-244-0-0-26`, or the etcd key) and throws
 * CalicoRecordError naming the field and the value when the record is malformed.
 */
import { type Prefix, formatPrefix, parsePrefix } from '../../ip/index.js';

export class CalicoRecordError extends Error {
  constructor(
    readonly source: string,
    problem: string,
    options?: ErrorOptions,
  ) {
    super(`${source}: ${problem}`, options);
    this.name = 'CalicoRecordError';
  }
}

export interface CalicoPool {
  readonly name: string;
  readonly cidr: Prefix;
  /** 0 when the record left it to the default. */
  readonly blockSize: number;
  readonly nodeSelector: string;
  readonly disabled: boolean;
  readonly source: string;
}

export interface CalicoAttribute {
  readonly handleId?: string;
  /** Calico's `secondary`: namespace, pod, node, type, timestamp… */
  readonly owner: Readonly<Record<string, string>>;
  /** Set while a released address cools down (Calico frees it after IPCooldownSeconds). */
  readonly releasedAt?: string;
}

export interface CalicoBlock {
  readonly cidr: Prefix;
  /** Calico's affinity text as stored ("host:node-a"), or null. */
  readonly affinity: string | null;
  /** Index = ordinal; value = attribute index, or null (free). */
  readonly allocations: readonly (number | null)[];
  readonly attributes: readonly CalicoAttribute[];
  readonly deleted: boolean;
  readonly source: string;
}

export interface CalicoAffinity {
  readonly node: string;
  readonly cidr: Prefix;
  /** confirmed | pending | pendingDeletion ('' read as confirmed, as Calico does for old records). */
  readonly state: string;
  readonly deleted: boolean;
  readonly source: string;
}

export interface CalicoHandle {
  readonly handleId: string;
  readonly blocks: Readonly<Record<string, number>>;
  readonly deleted: boolean;
  readonly source: string;
}

type Json = Record<string, unknown>;

export function asObject(source: string, field: string, v: unknown): Json {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new CalicoRecordError(source, `${field} is ${describe(v)}, not an object`);
  return v as Json;
}

function describe(v: unknown): string {
  const s = JSON.stringify(v);
  return s === undefined ? 'absent' : s.length > 80 ? `${s.slice(0, 77)}...` : s;
}

function str(source: string, o: Json, field: string, path: string): string {
  const v = o[field];
  if (typeof v !== 'string' || v === '') throw new CalicoRecordError(source, `${path}${field} is ${describe(v)}, not a non-empty string`);
  return v;
}

function optStr(source: string, o: Json, field: string, path: string): string | undefined {
  const v = o[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw new CalicoRecordError(source, `${path}${field} is ${describe(v)}, not a string`);
  return v;
}

function optBool(source: string, o: Json, field: string, path: string): boolean {
  const v = o[field];
  if (v === undefined || v === null) return false;
  if (typeof v === 'boolean') return v;
  // BlockAffinitySpec.deleted is a string in the CRD ("true" / "false" / "").
  if (v === 'true') return true;
  if (v === 'false' || v === '') return false;
  throw new CalicoRecordError(source, `${path}${field} is ${describe(v)}, not a boolean`);
}

function cidr(source: string, o: Json, field: string, path: string): Prefix {
  const text = str(source, o, field, path);
  try {
    // Calico stores masked CIDRs; a record with host bits set is malformed.
    return parsePrefix(text);
  } catch (e) {
    throw new CalicoRecordError(source, `${path}${field} ${JSON.stringify(text)}: ${(e as Error).message}`, { cause: e });
  }
}

/** An IPPool's spec (KDD: the CRD's spec; etcd: the v3 resource's spec). */
export function decodeCalicoPool(source: string, name: string, spec: Json): CalicoPool {
  const p = 'spec.';
  const blockSize = spec.blockSize ?? 0;
  if (typeof blockSize !== 'number' || !Number.isInteger(blockSize) || blockSize < 0 || blockSize > 128) {
    throw new CalicoRecordError(source, `spec.blockSize is ${describe(blockSize)}, not a prefix length`);
  }
  return {
    name,
    cidr: cidr(source, spec, 'cidr', p),
    blockSize,
    nodeSelector: optStr(source, spec, 'nodeSelector', p) ?? '',
    disabled: optBool(source, spec, 'disabled', p),
    source,
  };
}

/** An allocation block (KDD: the IPAMBlock's spec; etcd: the value). `path` prefixes field names in messages ("spec." or ""). */
export function decodeCalicoBlock(source: string, o: Json, path: string): CalicoBlock {
  const c = cidr(source, o, 'cidr', path);
  let affinity = optStr(source, o, 'affinity', path) ?? null;
  if (affinity === null) {
    const legacy = optStr(source, o, 'hostAffinity', path);
    if (legacy) affinity = `host:${legacy}`;
  }
  const rawAlloc = o.allocations ?? [];
  if (!Array.isArray(rawAlloc)) throw new CalicoRecordError(source, `${path}allocations is ${describe(rawAlloc)}, not an array`);
  const size = 2 ** ((c.family === 4 ? 32 : 128) - c.len);
  if (rawAlloc.length > size)
    throw new CalicoRecordError(source, `${path}allocations has ${rawAlloc.length} entries, more than the ${size} addresses of ${formatPrefix(c)}`);
  const allocations = rawAlloc.map((v: unknown, i) => {
    if (v === null) return null;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0)
      throw new CalicoRecordError(source, `${path}allocations[${i}] is ${describe(v)}, not an attribute index or null`);
    return v;
  });
  const rawAttrs = o.attributes ?? [];
  if (!Array.isArray(rawAttrs)) throw new CalicoRecordError(source, `${path}attributes is ${describe(rawAttrs)}, not an array`);
  const attributes = rawAttrs.map((a: unknown, i): CalicoAttribute => {
    const at = `${path}attributes[${i}].`;
    const ao = asObject(source, at.slice(0, -1), a);
    const owner: Record<string, string> = {};
    const sec = ao.secondary;
    if (sec !== undefined && sec !== null) {
      for (const [k, v] of Object.entries(asObject(source, `${at}secondary`, sec))) {
        if (typeof v !== 'string') throw new CalicoRecordError(source, `${at}secondary.${k} is ${describe(v)}, not a string`);
        owner[k] = v;
      }
    }
    const handleId = optStr(source, ao, 'handle_id', at);
    const releasedAt = optStr(source, ao, 'releasedAt', at);
    return { ...(handleId ? { handleId } : {}), owner, ...(releasedAt ? { releasedAt } : {}) };
  });
  return { cidr: c, affinity, allocations, attributes, deleted: optBool(source, o, 'deleted', path), source };
}

/** A block affinity: node and CIDR from the CRD's spec or from the etcd key, state and deleted from the record. */
export function decodeCalicoAffinity(source: string, node: string, block: Prefix, o: Json, path: string): CalicoAffinity {
  const state = optStr(source, o, 'state', path) ?? '';
  if (!['', 'confirmed', 'pending', 'pendingDeletion'].includes(state)) {
    throw new CalicoRecordError(source, `${path}state is ${JSON.stringify(state)}, not confirmed, pending or pendingDeletion`);
  }
  return { node, cidr: block, state: state === '' ? 'confirmed' : state, deleted: optBool(source, o, 'deleted', path), source };
}

/** The CRD's BlockAffinity spec (node and cidr in it). */
export function decodeCalicoAffinitySpec(source: string, spec: Json): CalicoAffinity {
  return decodeCalicoAffinity(source, str(source, spec, 'node', 'spec.'), cidr(source, spec, 'cidr', 'spec.'), spec, 'spec.');
}

/** A handle record: `handleId` from the CRD's spec.handleID or the etcd key. */
export function decodeCalicoHandle(source: string, handleId: string, o: Json, path: string): CalicoHandle {
  const blocks: Record<string, number> = {};
  const raw = o.block ?? {};
  for (const [k, v] of Object.entries(asObject(source, `${path}block`, raw))) {
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0)
      throw new CalicoRecordError(source, `${path}block[${JSON.stringify(k)}] is ${describe(v)}, not a count`);
    blocks[k] = v;
  }
  return { handleId, blocks, deleted: optBool(source, o, 'deleted', path), source };
}

/** Everything read from one Calico datastore, and the records that could not be decoded. */
export interface CalicoState {
  readonly pools: readonly CalicoPool[];
  readonly blocks: readonly CalicoBlock[];
  readonly affinities: readonly CalicoAffinity[];
  readonly handles: readonly CalicoHandle[];
  /** One line per malformed or unknown record: its source and the problem. */
  readonly malformed: readonly CalicoRecordError[];
}
