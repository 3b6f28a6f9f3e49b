/**
 * etcd's gRPC messages for the calls podipam makes, in the shapes its JSON gateway uses
 * (etcd-codec.ts: keys and values base64, int64s as decimal strings, zero values left out),
 * so one request shape serves both: `grpcMethod` names the gRPC method of a gateway path,
 * `encodeGrpcRequest` turns a gateway request body into the protobuf message and
 * `decodeGrpcResponse` the protobuf answer into the gateway's JSON. Field numbers are those of
 * etcd's etcdserverpb (rpc.proto) and mvccpb (kv.proto). Only the fields podipam sends are
 * encoded; an unknown field in a request is a TypeError (a programming error), one in an answer
 * is ignored.
 */
import { ProtoWriter, protoFields } from './protobuf-wire.js';

/** Gateway paths podipam calls → etcd's gRPC method paths. */
const METHODS: Readonly<Record<string, string>> = {
  'kv/range': '/etcdserverpb.KV/Range',
  'kv/txn': '/etcdserverpb.KV/Txn',
  'auth/authenticate': '/etcdserverpb.Auth/Authenticate',
};

/** The gRPC method of a gateway path; undefined for a path with no unary gRPC form here. */
export function grpcMethod(path: string): string | undefined {
  return METHODS[path];
}

type Json = Record<string, unknown>;

const b64 = (v: unknown): Buffer => Buffer.from(typeof v === 'string' ? v : '', 'base64');
const int = (v: unknown): string => (v === undefined ? '0' : String(v));

function rangeRequest(r: Json): ProtoWriter {
  known(r, ['key', 'range_end', 'limit', 'revision', 'count_only'], 'RangeRequest');
  const w = new ProtoWriter().bytes(1, b64(r['key']));
  if (r['range_end'] !== undefined) w.bytes(2, b64(r['range_end']));
  return w
    .varint(3, int(r['limit']))
    .varint(4, int(r['revision']))
    .varint(9, r['count_only'] === true);
}

const COMPARE_RESULT: Readonly<Record<string, number>> = { EQUAL: 0, GREATER: 1, LESS: 2, NOT_EQUAL: 3 };
const COMPARE_TARGET: Readonly<Record<string, number>> = { VERSION: 0, CREATE: 1, MOD: 2, VALUE: 3, LEASE: 4 };

function compare(c: Json): ProtoWriter {
  known(c, ['key', 'target', 'result', 'mod_revision'], 'Compare');
  const result = COMPARE_RESULT[String(c['result'] ?? 'EQUAL')];
  const target = COMPARE_TARGET[String(c['target'] ?? 'VERSION')];
  if (result === undefined || target !== 2) throw new TypeError(`Compare: only MOD compares are encoded, got ${JSON.stringify(c)}`);
  // The oneof member is written even at 0 (MOD == 0: the key is absent).
  return new ProtoWriter().varint(1, result).varint(2, target).bytes(3, b64(c['key'])).varint(6, int(c['mod_revision']), true);
}

function requestOp(op: Json): ProtoWriter {
  const [kind, ...rest] = Object.keys(op);
  if (kind === undefined || rest.length > 0) throw new TypeError(`RequestOp: exactly one request expected, got ${JSON.stringify(Object.keys(op))}`);
  const r = op[kind] as Json;
  if (kind === 'request_range') return new ProtoWriter().bytes(1, rangeRequest(r));
  if (kind === 'request_put') {
    known(r, ['key', 'value'], 'PutRequest');
    return new ProtoWriter().bytes(2, new ProtoWriter().bytes(1, b64(r['key'])).bytes(2, b64(r['value'])));
  }
  if (kind === 'request_delete_range') {
    known(r, ['key', 'range_end'], 'DeleteRangeRequest');
    const d = new ProtoWriter().bytes(1, b64(r['key']));
    if (r['range_end'] !== undefined) d.bytes(2, b64(r['range_end']));
    return new ProtoWriter().bytes(3, d);
  }
  throw new TypeError(`RequestOp: ${kind} is not encoded`);
}

/** The protobuf request of gateway `path` for the gateway-shaped `body`. */
export function encodeGrpcRequest(path: string, body: unknown): Buffer {
  const r = (body ?? {}) as Json;
  if (path === 'kv/range') return rangeRequest(r).finish();
  if (path === 'kv/txn') {
    known(r, ['compare', 'success', 'failure'], 'TxnRequest');
    const w = new ProtoWriter();
    for (const c of (r['compare'] ?? []) as Json[]) w.bytes(1, compare(c));
    for (const op of (r['success'] ?? []) as Json[]) w.bytes(2, requestOp(op));
    for (const op of (r['failure'] ?? []) as Json[]) w.bytes(3, requestOp(op));
    return w.finish();
  }
  if (path === 'auth/authenticate') {
    known(r, ['name', 'password'], 'AuthenticateRequest');
    return new ProtoWriter()
      .bytes(1, String(r['name'] ?? ''))
      .bytes(2, String(r['password'] ?? ''))
      .finish();
  }
  throw new TypeError(`no gRPC encoding for ${path}`);
}

function header(buf: Buffer): Json {
  const h: Json = {};
  for (const f of protoFields(buf)) {
    if (f.no === 1 && f.varint !== undefined) h['cluster_id'] = f.varint;
    else if (f.no === 2 && f.varint !== undefined) h['member_id'] = f.varint;
    else if (f.no === 3 && f.varint !== undefined) h['revision'] = f.varint;
    else if (f.no === 4 && f.varint !== undefined) h['raft_term'] = f.varint;
  }
  return h;
}

function keyValue(buf: Buffer): Json {
  const kv: Json = {};
  for (const f of protoFields(buf)) {
    if (f.no === 1 && f.bytes !== undefined) kv['key'] = f.bytes.toString('base64');
    else if (f.no === 2 && f.varint !== undefined) kv['create_revision'] = f.varint;
    else if (f.no === 3 && f.varint !== undefined) kv['mod_revision'] = f.varint;
    else if (f.no === 4 && f.varint !== undefined) kv['version'] = f.varint;
    else if (f.no === 5 && f.bytes !== undefined) kv['value'] = f.bytes.toString('base64');
  }
  return kv;
}

function rangeResponse(buf: Buffer): Json {
  const r: Json = {};
  const kvs: Json[] = [];
  for (const f of protoFields(buf)) {
    if (f.no === 1 && f.bytes !== undefined) r['header'] = header(f.bytes);
    else if (f.no === 2 && f.bytes !== undefined) kvs.push(keyValue(f.bytes));
    else if (f.no === 3 && f.varint !== undefined) r['more'] = f.varint !== '0';
    else if (f.no === 4 && f.varint !== undefined) r['count'] = f.varint;
  }
  if (kvs.length > 0) r['kvs'] = kvs;
  return r;
}

function responseOp(buf: Buffer): Json {
  for (const f of protoFields(buf)) {
    if (f.bytes === undefined) continue;
    if (f.no === 1) return { response_range: rangeResponse(f.bytes) };
    if (f.no === 2) return { response_put: headerOnly(f.bytes) };
    if (f.no === 3) return { response_delete_range: headerOnly(f.bytes) };
  }
  return {};
}

function headerOnly(buf: Buffer): Json {
  for (const f of protoFields(buf)) if (f.no === 1 && f.bytes !== undefined) return { header: header(f.bytes) };
  return {};
}

/** The gateway-shaped JSON of gRPC answer `buf` to gateway `path`; ProtobufError if it does not parse. */
export function decodeGrpcResponse(path: string, buf: Buffer): Json {
  if (path === 'kv/range') return rangeResponse(buf);
  if (path === 'kv/txn') {
    const r: Json = {};
    const responses: Json[] = [];
    for (const f of protoFields(buf)) {
      if (f.no === 1 && f.bytes !== undefined) r['header'] = header(f.bytes);
      else if (f.no === 2 && f.varint !== undefined) r['succeeded'] = f.varint !== '0';
      else if (f.no === 3 && f.bytes !== undefined) responses.push(responseOp(f.bytes));
    }
    if (responses.length > 0) r['responses'] = responses;
    return r;
  }
  if (path === 'auth/authenticate') {
    const r: Json = {};
    for (const f of protoFields(buf)) {
      if (f.no === 1 && f.bytes !== undefined) r['header'] = header(f.bytes);
      else if (f.no === 2 && f.bytes !== undefined) r['token'] = f.bytes.toString('utf8');
    }
    return r;
  }
  throw new TypeError(`no gRPC decoding for ${path}`);
}

function known(r: Json, keys: readonly string[], what: string): void {
  for (const k of Object.keys(r)) if (!keys.includes(k)) throw new TypeError(`${what}: field ${k} is not encoded`);
}
