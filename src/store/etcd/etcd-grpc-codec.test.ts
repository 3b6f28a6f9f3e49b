import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodeGrpcResponse, encodeGrpcRequest, grpcMethod } from './etcd-grpc-codec.js';

const b64 = (s: string): string => Buffer.from(s).toString('base64');
const hex = (b: Buffer): string => b.toString('hex');

test('names the gRPC method of each unary gateway path podipam calls, and none for the streams', () => {
  assert.equal(grpcMethod('kv/range'), '/etcdserverpb.KV/Range');
  assert.equal(grpcMethod('kv/txn'), '/etcdserverpb.KV/Txn');
  assert.equal(grpcMethod('auth/authenticate'), '/etcdserverpb.Auth/Authenticate');
  assert.equal(grpcMethod('watch'), undefined);
  assert.equal(grpcMethod('maintenance/snapshot'), undefined);
});

test('RangeRequest: key 1, range_end 2, limit 3, revision 4, count_only 9', () => {
  const b = encodeGrpcRequest('kv/range', { key: b64('a'), range_end: b64('b'), limit: '2', revision: '300', count_only: true });
  assert.equal(hex(b), '0a0161' + '120162' + '1802' + '20ac02' + '4801');
});

test('TxnRequest: a MOD == 0 compare keeps its mod_revision 0; puts, deletes and ranges as RequestOps', () => {
  const b = encodeGrpcRequest('kv/txn', {
    compare: [{ key: b64('k'), target: 'MOD', result: 'EQUAL', mod_revision: '0' }],
    success: [{ request_put: { key: b64('k'), value: b64('v') } }, { request_delete_range: { key: b64('d') } }],
    failure: [{ request_range: { key: b64('k') } }],
  });
  // compare (1): target MOD 10 02, key 1a 01 6b, mod_revision 30 00 (result EQUAL is 0, left out)
  // success (2): request_put (2) { key 0a 01 6b, value 12 01 76 }; request_delete_range (3) { key 0a 01 64 }
  // failure (3): request_range (1) { key 0a 01 6b }
  assert.equal(hex(b), '0a07' + '10021a016b3000' + '1208' + '1206' + '0a016b120176' + '1205' + '1a03' + '0a0164' + '1a05' + '0a03' + '0a016b');
  const rev = encodeGrpcRequest('kv/txn', { compare: [{ key: b64('k'), target: 'MOD', result: 'EQUAL', mod_revision: '5' }] });
  assert.equal(hex(rev), '0a07' + '10021a016b3005');
});

test('a request field the codec does not know is a TypeError, not a message silently without it', () => {
  assert.throws(() => encodeGrpcRequest('kv/range', { key: b64('a'), sort_order: 'ASCEND' }), /field sort_order is not encoded/);
  assert.throws(() => encodeGrpcRequest('kv/txn', { compare: [{ key: b64('k'), target: 'VERSION', result: 'EQUAL' }] }), /only MOD compares/);
  assert.throws(() => encodeGrpcRequest('kv/txn', { success: [{ request_put: { key: b64('k') }, request_range: { key: b64('k') } }] }), /exactly one request/);
  assert.throws(() => encodeGrpcRequest('lease/grant', {}), /no gRPC encoding for lease\/grant/);
});

test('RangeResponse and TxnResponse decode to the gateway JSON: base64 bytes, int64s as strings, a uint64 cluster id whole', () => {
  // header { cluster_id 2^64-1, revision 7 }, kvs [{ key "/p/k", create 2, mod 7, version 3, value "v" }], more true, count 1
  const header = '0a0d' + '08ffffffffffffffffff01' + '1807';
  const kv = '120f' + '0a042f702f6b' + '1002' + '1807' + '2003' + '2a0176';
  const range = Buffer.from(header + kv + '1801' + '2001', 'hex');
  assert.deepEqual(decodeGrpcResponse('kv/range', range), {
    header: { cluster_id: '18446744073709551615', revision: '7' },
    kvs: [{ key: b64('/p/k'), create_revision: '2', mod_revision: '7', version: '3', value: b64('v') }],
    more: true,
    count: '1',
  });
  // A failed txn: succeeded left out (false), one response_range with no kvs.
  const txn = Buffer.from('0a021807' + '1a04' + '0a02' + '0a00', 'hex');
  assert.deepEqual(decodeGrpcResponse('kv/txn', txn), { header: { revision: '7' }, responses: [{ response_range: { header: {} } }] });
  const ok = Buffer.from('0a0218081001' + '1a04' + '1202' + '0a00', 'hex');
  assert.deepEqual(decodeGrpcResponse('kv/txn', ok), { header: { revision: '8' }, succeeded: true, responses: [{ response_put: { header: {} } }] });
  assert.deepEqual(decodeGrpcResponse('auth/authenticate', Buffer.from('0a00' + '1203' + '746f6b', 'hex')), { header: {}, token: 'tok' });
});
