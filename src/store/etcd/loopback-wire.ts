/**
 * The loopback etcd's side of the wire (loopback-etcd.ts): the requests podipam's etcd client
 * sends, decoded, and etcd's answers to them, encoded as etcd 3.4 writes them; refusals with
 * gRPC's status codes.
 */
import type { ServerHttp2Stream } from 'node:http2';
import { type ProtoField, ProtoWriter, protoFields } from './protobuf-wire.js';

/** gRPC status codes the loopback answers with. */
export const INVALID_ARGUMENT = 3;
export const RESOURCE_EXHAUSTED = 8;
export const UNIMPLEMENTED = 12;

/** One version of a key: its value (undefined: deleted at `rev`). */
export interface Version {
  readonly rev: number;
  /** undefined: deleted at `rev`. */
  readonly value: Buffer | undefined;
  readonly create: number;
  readonly version: number;
}

/** A key live at a read's revision, and its version. */
export interface Live {
  readonly key: string;
  readonly v: Version & { readonly value: Buffer };
}

/** A request the loopback does not take: answered with gRPC status `code`. */
export class Refusal extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

export interface RangeRequest {
  readonly key: string;
  /** undefined: `key` alone. */
  readonly end: string | undefined;
  readonly limit: number;
  readonly rev: number;
  readonly countOnly: boolean;
}

export function rangeRequest(buf: Buffer): RangeRequest {
  let key = '';
  let end: string | undefined;
  let limit = 0;
  let rev = 0;
  let countOnly = false;
  for (const f of protoFields(buf)) {
    if (f.no === 1) key = bytesOf(f, 'RangeRequest.key');
    else if (f.no === 2) end = bytesOf(f, 'RangeRequest.range_end');
    else if (f.no === 3) limit = intOf(f, 'RangeRequest.limit');
    else if (f.no === 4) rev = intOf(f, 'RangeRequest.revision');
    else if (f.no === 9) countOnly = intOf(f, 'RangeRequest.count_only') !== 0;
    else throw new Refusal(UNIMPLEMENTED, `RangeRequest field ${f.no} is not served by the loopback etcd`);
  }
  return { key, end: end === '' ? undefined : end, limit, rev, countOnly };
}

/** A RangeResponse of the keys `live` (the first `limit`, 0: all), as etcd writes it. */
export function rangeResponse(header: ProtoWriter, live: readonly Live[], limit: number, countOnly: boolean): ProtoWriter {
  const w = new ProtoWriter().bytes(1, header);
  if (!countOnly) for (const { key, v } of limit > 0 ? live.slice(0, limit) : live) w.bytes(2, keyValue(key, v));
  return w.varint(3, limit > 0 && live.length > limit).varint(4, live.length);
}

export type Op =
  | ({ readonly kind: 'range' } & RangeRequest)
  | { readonly kind: 'put'; readonly key: string; readonly value: Buffer }
  | { readonly kind: 'delete'; readonly key: string; readonly end: string | undefined };

export function requestOp(buf: Buffer): Op {
  for (const f of protoFields(buf)) {
    const b = f.bytes;
    if (b === undefined) continue;
    if (f.no === 1) return { kind: 'range', ...rangeRequest(b) };
    let key = '';
    let value = Buffer.alloc(0);
    let end: string | undefined;
    for (const g of protoFields(b)) {
      if (g.no === 1) key = bytesOf(g, 'key');
      else if (g.no === 2 && f.no === 2 && g.bytes !== undefined)
        value = Buffer.from(g.bytes); // a copy: the request's buffer is not kept
      else if (g.no === 2 && f.no === 3) end = bytesOf(g, 'DeleteRangeRequest.range_end');
      else throw new Refusal(UNIMPLEMENTED, `RequestOp ${f.no} field ${g.no} is not served by the loopback etcd`);
    }
    if (f.no === 2) return { kind: 'put', key, value };
    if (f.no === 3) return { kind: 'delete', key, end: end === '' ? undefined : end };
    throw new Refusal(UNIMPLEMENTED, `RequestOp field ${f.no} is not served by the loopback etcd`);
  }
  throw new Refusal(INVALID_ARGUMENT, 'an empty RequestOp');
}

/** A KeyValue as etcd writes it (proto3: an empty value left out). */
export function keyValue(key: string, v: Version & { value: Buffer }): ProtoWriter {
  const w = new ProtoWriter().bytes(1, Buffer.from(key, 'latin1')).varint(2, v.create).varint(3, v.rev).varint(4, v.version);
  return v.value.length > 0 ? w.bytes(5, v.value) : w;
}

export function bytesOf(f: ProtoField, what: string): string {
  if (f.bytes === undefined) throw new Refusal(INVALID_ARGUMENT, `${what} is not a bytes field`);
  return f.bytes.toString('latin1');
}

export function intOf(f: ProtoField, what: string): number {
  if (f.varint === undefined) throw new Refusal(INVALID_ARGUMENT, `${what} is not a varint`);
  const n = Number(f.varint);
  if (!Number.isSafeInteger(n)) throw new Refusal(INVALID_ARGUMENT, `${what} ${f.varint} is out of range`);
  return n;
}

export function refuse(stream: ServerHttp2Stream, code: number, message: string): void {
  if (stream.headersSent || stream.destroyed) return;
  // A trailers-only answer: the status in the headers, no body.
  stream.respond(
    { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': String(code), 'grpc-message': encodeURIComponent(message) },
    { endStream: true },
  );
}

/** Whether `k` is in etcd's range of `key` and `end` (undefined: `key` alone; "\0": from `key` on; else `[key, end)`). */
export function inRange(k: string, key: string, end: string | undefined): boolean {
  return end === undefined ? k === key : k >= key && (end === '\0' || k < end);
}
