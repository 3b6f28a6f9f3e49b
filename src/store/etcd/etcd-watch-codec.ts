/**
 * etcd's gRPC watch messages (`/etcdserverpb.Watch/Watch`), beside etcd-grpc-codec.ts for the
 * unary calls: `encodeWatchCreate` builds the WatchRequest that creates a watch, and
 * `decodeWatchResponse` turns a WatchResponse into WatchResult, the JSON gateway's shape of a
 * watch response (keys and values base64, int64s as decimal strings, an event type only when
 * DELETE), so EtcdWatch's event logic reads one shape. Field numbers are etcd's (rpc.proto:
 * WatchRequest, WatchCreateRequest, WatchResponse; kv.proto: Event, KeyValue). Unknown fields
 * of a response are ignored; a malformed one throws ProtobufError.
 */
import type { WireKv } from './etcd-codec.js';
import { ProtobufError, ProtoWriter, protoFields } from './protobuf-wire.js';

/** One watch response, in the gateway's JSON shape. */
export interface WatchResult {
  readonly watch_id?: string;
  readonly created?: boolean;
  readonly canceled?: boolean;
  readonly compact_revision?: string;
  readonly cancel_reason?: string;
  readonly fragment?: boolean;
  readonly events?: readonly WatchResultEvent[];
}

export interface WatchResultEvent {
  /** 'DELETE', or undefined for a PUT (proto3 leaves the zero enum out, and so does the gateway). */
  readonly type?: 'DELETE';
  readonly kv?: WireKv;
}

/** A watch to create: keys in [key, rangeEnd), from `startRevision`. */
export interface WatchCreate {
  readonly key: Buffer;
  readonly rangeEnd: Buffer;
  readonly startRevision: number;
  readonly progressNotify: boolean;
  /** Lets etcd split a response over its request size limit into fragments (WatchResponse.fragment). */
  readonly fragment: boolean;
}

/** WatchRequest { create_request (1): WatchCreateRequest { key 1, range_end 2, start_revision 3, progress_notify 4, fragment 8 } }. */
export function encodeWatchCreate(c: WatchCreate): Buffer {
  const create = new ProtoWriter().bytes(1, c.key).bytes(2, c.rangeEnd).varint(3, c.startRevision).varint(4, c.progressNotify).varint(8, c.fragment);
  return new ProtoWriter().bytes(1, create).finish();
}

function keyValue(buf: Buffer): WireKv {
  let key: string | undefined;
  let value: string | undefined;
  let mod: string | undefined;
  for (const f of protoFields(buf)) {
    if (f.no === 1 && f.bytes !== undefined) key = f.bytes.toString('base64');
    else if (f.no === 3 && f.varint !== undefined) mod = f.varint;
    else if (f.no === 5 && f.bytes !== undefined) value = f.bytes.toString('base64');
  }
  return { ...(key === undefined ? {} : { key }), ...(value === undefined ? {} : { value }), ...(mod === undefined ? {} : { mod_revision: mod }) };
}

function event(buf: Buffer): WatchResultEvent {
  let type: string | undefined;
  let kv: WireKv | undefined;
  for (const f of protoFields(buf)) {
    if (f.no === 1 && f.varint !== undefined) type = f.varint;
    else if (f.no === 2 && f.bytes !== undefined) kv = keyValue(f.bytes);
  }
  if (type !== undefined && type !== '0' && type !== '1') throw new ProtobufError(`watch event of unknown type ${type}`);
  return { ...(type === '1' ? { type: 'DELETE' as const } : {}), ...(kv === undefined ? {} : { kv }) };
}

/** The gateway-shaped WatchResult of WatchResponse `buf`. */
export function decodeWatchResponse(buf: Buffer): WatchResult {
  const r: { -readonly [K in keyof WatchResult]: WatchResult[K] } = {};
  const events: WatchResultEvent[] = [];
  for (const f of protoFields(buf)) {
    if (f.varint !== undefined) {
      if (f.no === 2) r.watch_id = f.varint;
      else if (f.no === 3) r.created = f.varint !== '0';
      else if (f.no === 4) r.canceled = f.varint !== '0';
      else if (f.no === 5) r.compact_revision = f.varint;
      else if (f.no === 7) r.fragment = f.varint !== '0';
    } else if (f.no === 6) r.cancel_reason = f.bytes.toString('utf8');
    else if (f.no === 11) events.push(event(f.bytes));
  }
  if (events.length > 0) r.events = events;
  return r;
}
