/**
 * The warm pool's pod record: `agent-pods/<node>/<attachment>` → JSON naming the warm addresses
 * one pod attachment was given. The agent writes it behind each ADD (src/warm/warm-verbs.ts) and
 * deletes it at DEL; the history follower, the cluster's handles-of-pod lookup and `ipam check`,
 * the warm-usage summary and the agent's restore read it. This file is the one place its key and
 * value are written and read.
 *
 * Contract of the value: a JSON object with `addrs` (a list of address texts, required) and the
 * optional strings `network`, `containerId`, `ifname`, `namespace`, `name`, `uid`, `since` (an ISO
 * time) and `warmHandles` (the warm handle of each address, for a reader that wants it). An empty
 * string reads as absent. Anything else is a PodRecordError naming the key and the field; each
 * reader decides whether to skip or report it.
 *
 * Compact form (what the writer puts since the datastore carries one record per running pod): a
 * record whose attachment is the CNI handle of its network, container id and interface
 * (handle-id.ts) leaves those three out — with none of them present the reader takes them from
 * the attachment — and addresses that share one warm handle name it once, `warmHandle`. Records
 * of the full form (every earlier writer's) read as before; a reader of an earlier version
 * reads a compact record with those fields absent (they are optional) and no warm handles.
 */
import { cniHandleId, parseCniHandleId } from './handle-id.js';
import { POD_RECORD_PREFIX } from './reserved-network.js';

export { POD_RECORD_PREFIX };

/** The fields an ADD writes. */
export interface WarmPodRecordFields {
  readonly addrs: readonly string[];
  readonly network?: string | undefined;
  readonly containerId?: string | undefined;
  readonly ifname?: string | undefined;
  readonly namespace?: string | undefined;
  readonly name?: string | undefined;
  readonly uid?: string | undefined;
  /** When the ADD was answered (ms since the epoch). */
  readonly since?: number | undefined;
  readonly warmHandles?: readonly (string | undefined)[] | undefined;
}

/** A decoded record: the fields and where the key puts it. */
export interface WarmPodRecord extends WarmPodRecordFields {
  readonly node: string;
  /** The pod attachment's key (the CNI handle of the pod) on that node. */
  readonly attachment: string;
}

/** A pod record that does not decode: the key and what is wrong. */
export class PodRecordError extends Error {
  constructor(
    readonly key: string,
    readonly problem: string,
    options?: ErrorOptions,
  ) {
    super(`pod record ${key}: ${problem}`, options);
    this.name = 'PodRecordError';
  }
}

/** The datastore key of `attachment`'s record on `node` (`node` '' and `attachment` '' give the prefixes). */
export function warmPodRecordKey(node: string, attachment: string): string {
  return `${POD_RECORD_PREFIX}${node}/${attachment}`;
}

/** The records of `node` ('' = every node) start with this. */
export function warmPodRecordPrefix(node: string): string {
  return node === '' ? POD_RECORD_PREFIX : `${POD_RECORD_PREFIX}${node}/`;
}

/** Node and attachment of a pod record key, or undefined for another key. Node names hold no "/". */
export function parseWarmPodRecordKey(key: string): { node: string; attachment: string } | undefined {
  if (!key.startsWith(POD_RECORD_PREFIX)) return undefined;
  const rest = key.slice(POD_RECORD_PREFIX.length);
  const i = rest.indexOf('/');
  if (i <= 0 || i === rest.length - 1) return undefined;
  return { node: rest.slice(0, i), attachment: rest.slice(i + 1) };
}

/**
 * The record's value (JSON text) for `fields`; given the record's `attachment` (its key's), the
 * compact form where it applies (see above).
 */
export function encodeWarmPodRecord(fields: WarmPodRecordFields, attachment?: string): string {
  const { since, ...rest } = fields;
  const { network, containerId, ifname } = rest;
  const fromKey =
    attachment !== undefined &&
    network !== undefined &&
    containerId !== undefined &&
    ifname !== undefined &&
    network !== '' &&
    containerId !== '' &&
    ifname !== '' &&
    cniHandleId(network, containerId, ifname) === attachment;
  const handles = rest.warmHandles;
  const one =
    attachment !== undefined &&
    handles !== undefined &&
    handles.length > 0 &&
    handles.length === rest.addrs.length &&
    handles.every((h) => h !== undefined && h === handles[0]);
  return JSON.stringify({
    network: fromKey ? undefined : network,
    containerId: fromKey ? undefined : containerId,
    ifname: fromKey ? undefined : ifname,
    addrs: rest.addrs,
    warmHandle: one ? handles[0] : undefined,
    warmHandles: one ? undefined : handles,
    since: since === undefined ? undefined : new Date(since).toISOString(),
    namespace: rest.namespace,
    name: rest.name,
    uid: rest.uid,
  });
}

/** Decodes the entry `key` → `value`; throws PodRecordError naming the key and the field. */
export function decodeWarmPodRecord(key: string, value: string): WarmPodRecord {
  const at = parseWarmPodRecordKey(key);
  if (!at) throw new PodRecordError(key, `the key is not ${POD_RECORD_PREFIX}<node>/<attachment>`);
  let o: unknown;
  try {
    o = JSON.parse(value);
  } catch (e) {
    throw new PodRecordError(key, 'the value is not JSON', { cause: e });
  }
  if (typeof o !== 'object' || o === null || Array.isArray(o)) throw new PodRecordError(key, 'the value is not a JSON object');
  const v = o as Record<string, unknown>;
  const addrs = v.addrs;
  if (!Array.isArray(addrs) || !addrs.every((a): a is string => typeof a === 'string'))
    throw new PodRecordError(key, 'field "addrs" is not a list of address texts');
  const str = (k: string): string | undefined => {
    const x = v[k];
    if (x === undefined || x === null || x === '') return undefined;
    if (typeof x !== 'string') throw new PodRecordError(key, `field "${k}" is not a string: ${JSON.stringify(x)}`);
    return x;
  };
  const sinceText = str('since');
  const since = sinceText === undefined ? undefined : Date.parse(sinceText);
  if (since !== undefined && Number.isNaN(since)) throw new PodRecordError(key, `field "since" is not a time: ${JSON.stringify(sinceText)}`);
  const handles = v.warmHandles;
  const shared = str('warmHandle');
  const warmHandles =
    shared !== undefined ? addrs.map(() => shared) : Array.isArray(handles) ? handles.map((h) => (typeof h === 'string' ? h : undefined)) : undefined;
  let network = str('network');
  let containerId = str('containerId');
  let ifname = str('ifname');
  if (network === undefined && containerId === undefined && ifname === undefined) {
    // The compact form: the attachment is the CNI handle of the three (else they stay absent).
    const parts = parseCniHandleId(at.attachment);
    if (parts) ({ network, containerId, ifname } = parts);
  }
  return {
    node: at.node,
    attachment: at.attachment,
    addrs,
    network,
    containerId,
    ifname,
    namespace: str('namespace'),
    name: str('name'),
    uid: str('uid'),
    since,
    ...(warmHandles ? { warmHandles } : {}),
  };
}

/** decodeWarmPodRecord, or the PodRecordError (for readers that skip or report a bad record and go on). */
export function tryDecodeWarmPodRecord(key: string, value: string): WarmPodRecord | PodRecordError {
  try {
    return decodeWarmPodRecord(key, value);
  } catch (e) {
    if (e instanceof PodRecordError) return e;
    throw e;
  }
}
