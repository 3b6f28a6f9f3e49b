/**
 * The loopback etcd answers podipam's etcd client as etcd does: the whole store conformance
 * suite, watches included, through a real EtcdStore over gRPC; and what it refuses, refused
 * with gRPC's codes.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { connect } from 'node:http2';
import { storeConformance } from '../../../test/suites/conformance.js';
import { openStore } from '../open-store.js';
import { LoopbackEtcd } from './loopback-etcd.js';
import { grpcFrame } from './grpc-frames.js';
import { ProtoWriter } from './protobuf-wire.js';

let loop: LoopbackEtcd | undefined;
before(async () => {
  loop = await LoopbackEtcd.start();
});
after(async () => loop?.close());
const url = (): string => {
  if (!loop) throw new Error('the loopback etcd did not start');
  return loop.url;
};

// env {}: no PODIPAM_ETCD_* of the test's environment (credentials would ask the loopback to authenticate).
storeConformance('loopback etcd', () => openStore(url(), { env: {} }), { incrementsPerWorker: 25 });

describe('loopback etcd refusals', () => {
  /** One gRPC call by hand: its grpc-status and message. */
  async function call(path: string, message: Buffer, times = 1, to = url()): Promise<{ status: string; message: string }> {
    const session = connect(to.replace('etcd://', 'http://'));
    try {
      const req = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers' });
      req.end(Buffer.concat(Array.from({ length: times }, () => grpcFrame(message))));
      return await new Promise((resolve, reject) => {
        let status = '';
        let text = '';
        const take = (h: Record<string, unknown>): void => {
          if (h['grpc-status'] !== undefined) status = String(h['grpc-status']);
          if (h['grpc-message'] !== undefined) text = decodeURIComponent(String(h['grpc-message']));
        };
        req.on('response', take);
        req.on('trailers', take);
        req.on('data', () => undefined);
        req.on('error', reject);
        req.on('close', () => resolve({ status, message: text }));
      });
    } finally {
      session.close();
    }
  }

  it('answers UNIMPLEMENTED for a method it does not serve, naming it', async () => {
    const r = await call('/etcdserverpb.Lease/LeaseGrant', Buffer.alloc(0));
    assert.equal(r.status, '12');
    assert.match(r.message, /Lease\/LeaseGrant is not served/);
  });

  it('refuses a range with a field it does not serve, and a read at a future revision', async () => {
    // RangeRequest field 5 (sort_order) = 1
    const sorted = await call('/etcdserverpb.KV/Range', Buffer.from([0x0a, 0x01, 0x61, 0x28, 0x01]));
    assert.equal(sorted.status, '12');
    assert.match(sorted.message, /RangeRequest field 5/);
    // revision 2^40
    const future = await call('/etcdserverpb.KV/Range', Buffer.from([0x0a, 0x01, 0x61, 0x20, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20]));
    assert.equal(future.status, '11');
    assert.match(future.message, /future revision/);
  });

  it('ends a watch stream whose request it does not serve with the status in its trailers', async () => {
    // WatchRequest field 3 (progress_request)
    const r = await call('/etcdserverpb.Watch/Watch', new ProtoWriter().bytes(3, Buffer.alloc(0)).finish());
    assert.equal(r.status, '12');
    assert.match(r.message, /WatchRequest field 3/);
  });

  it('refuses a unary call of two messages, and a txn that puts and deletes one key', async () => {
    const range = new ProtoWriter().bytes(1, Buffer.from('a')).finish();
    const two = await call('/etcdserverpb.KV/Range', range, 2);
    assert.equal(two.status, '3');
    assert.match(two.message, /one request message/);
    const put = new ProtoWriter().bytes(2, new ProtoWriter().bytes(1, Buffer.from('k')).bytes(2, Buffer.from('v')));
    const del = new ProtoWriter().bytes(3, new ProtoWriter().bytes(1, Buffer.from('k')));
    const dup = await call('/etcdserverpb.KV/Txn', new ProtoWriter().bytes(2, put).bytes(2, del).finish());
    assert.equal(dup.status, '3');
    assert.match(dup.message, /duplicate key/);
  });

  it('refuses a txn of more than 128 operations of a kind, as etcd does', async () => {
    const w = new ProtoWriter();
    for (let i = 0; i < 129; i++) w.bytes(2, new ProtoWriter().bytes(2, new ProtoWriter().bytes(1, Buffer.from(`k${i}`)).bytes(2, Buffer.from('v'))));
    const r = await call('/etcdserverpb.KV/Txn', w.finish());
    assert.equal(r.status, '3');
    assert.match(r.message, /too many operations/);
  });

  it('keeps and watches within its limits: past them, RESOURCE_EXHAUSTED and nothing written', async () => {
    const small = await LoopbackEtcd.start({ maxStoredBytes: 4096, maxWatchers: 1 });
    try {
      const s = await openStore(small.url, { env: {} });
      try {
        await s.txn([], [{ type: 'put', key: 'a', value: 'x'.repeat(2000) }]);
        const rev = await s.revision();
        await assert.rejects(s.txn([], [{ type: 'put', key: 'b', value: 'x'.repeat(3000) }]), /at most 4096 bytes/);
        assert.equal(await s.revision(), rev, 'the refused txn wrote nothing');
        assert.equal(await s.get('b'), undefined);
      } finally {
        await s.close();
      }
      const create = new ProtoWriter().bytes(1, new ProtoWriter().bytes(1, Buffer.from('a'))).finish();
      const two = await call('/etcdserverpb.Watch/Watch', create, 2, small.url);
      assert.equal(two.status, '8');
      assert.match(two.message, /at most 1 watchers/);
    } finally {
      await small.close();
    }
  });

  it('answers a malformed message with INVALID_ARGUMENT, and goes on serving', async () => {
    const r = await call('/etcdserverpb.KV/Txn', Buffer.from([0x0a, 0x7f]));
    assert.equal(r.status, '3');
    const s = await openStore(url(), { env: {} });
    try {
      assert.ok((await s.revision()) >= 1);
    } finally {
      await s.close();
    }
  });
});
