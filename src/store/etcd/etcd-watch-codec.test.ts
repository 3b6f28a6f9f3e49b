import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodeWatchResponse, encodeWatchCreate } from './etcd-watch-codec.js';
import { ProtobufError } from './protobuf-wire.js';

const b64 = (s: string): string => Buffer.from(s).toString('base64');
const hex = (h: string): Buffer => Buffer.from(h, 'hex');

test('WatchRequest: create_request (1) { key 1, range_end 2, start_revision 3, progress_notify 4, fragment 8 }', () => {
  const b = encodeWatchCreate({ key: Buffer.from('a'), rangeEnd: Buffer.from('b'), startRevision: 300, progressNotify: true, fragment: true });
  // create_request 0a 0d { key 0a 01 61, range_end 12 01 62, start_revision 18 ac 02 (300), progress_notify 20 01, fragment 40 01 }
  assert.equal(b.toString('hex'), '0a0d' + '0a0161' + '120162' + '18ac02' + '2001' + '4001');
});

test('WatchRequest: start_revision 0 and progress_notify false are left out (proto3 zeros)', () => {
  const b = encodeWatchCreate({ key: Buffer.from('a'), rangeEnd: Buffer.from('b'), startRevision: 0, progressNotify: false, fragment: false });
  assert.equal(b.toString('hex'), '0a06' + '0a0161' + '120162');
});

test('WatchResponse: created, with a PUT and a DELETE event, in the gateway shape', () => {
  const r = decodeWatchResponse(
    hex(
      '0a021805' + // header (1) { revision 3: 5 } — not needed by the watch, skipped
        '1007' + // watch_id (2): 7
        '1801' + // created (3): true
        '5a0a' +
        '1208' +
        '0a016b' +
        '1805' +
        '2a0176' + // events (11): { kv (2) { key 1 "k", mod_revision 3: 5, value 5 "v" } } (type PUT = 0, left out)
        '5a09' +
        '0801' +
        '1205' +
        '0a016b' +
        '1806', // events (11): { type (1) DELETE = 1, kv { key "k", mod_revision 6 } }
    ),
  );
  assert.deepEqual(r, {
    watch_id: '7',
    created: true,
    events: [{ kv: { key: b64('k'), value: b64('v'), mod_revision: '5' } }, { type: 'DELETE', kv: { key: b64('k'), mod_revision: '6' } }],
  });
});

test('WatchResponse: fragment (7), a response continued in the next one', () => {
  assert.deepEqual(decodeWatchResponse(hex('3801' + '5a04' + '1202' + '1806')), { fragment: true, events: [{ kv: { mod_revision: '6' } }] });
});

test('WatchResponse: canceled (4) with compact_revision (5) and cancel_reason (6)', () => {
  assert.deepEqual(decodeWatchResponse(hex('2001' + '280a' + '3203616263')), { canceled: true, compact_revision: '10', cancel_reason: 'abc' });
});

test('WatchResponse: an event of a type etcd does not have, or a truncated message, throws ProtobufError', () => {
  assert.throws(() => decodeWatchResponse(hex('5a02' + '0802')), ProtobufError);
  assert.throws(() => decodeWatchResponse(hex('5a05' + '0801')), ProtobufError);
});
