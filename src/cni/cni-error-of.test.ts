import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CniCode, CniError } from './errors.js';
import { StoreError, StoreUnavailableError, StoreUrlError } from '../store/errors.js';
import { cniErrorOf } from './cni-error-of.js';
import { AddressUnavailableError, ContentionError, CorruptRecordError, NoPoolError, PoolExhaustedError } from '../cluster/records/errors.js';
import { FileIoError, LockTimeoutError, UnsafeFileError } from '../local/errors.js';
import { PodCidrNotAssignedError } from '../local/pod-cidr-source.js';

describe('cniErrorOf', () => {
  it('maps each cluster error to its CNI code, keeping the message', () => {
    const cases: [unknown, number, number][] = [
      [new StoreUnavailableError('etcd://x', 'down'), CniCode.TryAgainLater, CniCode.NotAvailable],
      [new ContentionError('assign', 100, ['blocks/x']), CniCode.TryAgainLater, CniCode.NotAvailable],
      [new PoolExhaustedError(4, 'n', ['p'], 1, 0), CniCode.Exhausted, CniCode.NotAvailable],
      [new AddressUnavailableError('10.0.0.1', 'taken', 'held'), CniCode.AddressUnavailable, CniCode.AddressUnavailable],
      [new NoPoolError(6, 'n', undefined, 'no pool exists'), CniCode.InvalidConfig, CniCode.NotAvailable],
      [new StoreUrlError('x', 'bad'), CniCode.InvalidConfig, CniCode.InvalidConfig],
      [new StoreError('x', 'corrupt'), CniCode.IoFailure, CniCode.NotAvailable],
      [new CorruptRecordError('blocks/10.0.0.0-26', 'not JSON'), CniCode.IoFailure, CniCode.NotAvailable],
      ['a string', CniCode.Internal, CniCode.Internal],
    ];
    for (const [e, add, status] of cases) {
      const a = cniErrorOf(e, 'ADD');
      assert.equal(a.code, add, String(e));
      assert.ok(a.msg.endsWith(e instanceof Error ? e.message : String(e)), a.msg);
      assert.equal(cniErrorOf(e, 'STATUS').code, status);
    }
    assert.equal(cniErrorOf(new StoreUrlError('x', 'bad')).msg, 'ipam.datastore: invalid datastore URL "x": bad');
    const own = new CniError(7, 'x');
    assert.equal(cniErrorOf(own), own);
  });

  it('carries the data callers branch on', () => {
    const e = new PoolExhaustedError(6, 'node-a', ['v6'], 2, 1, 'the node owns 20 IPv6 blocks, the per-host limit is 20');
    assert.equal(
      e.message,
      'no free IPv6 address for node "node-a" in pools [v6]: requested 2, found 1 (the node owns 20 IPv6 blocks, the per-host limit is 20)',
    );
    assert.deepEqual([e.family, e.node, e.pools, e.requested, e.available], [6, 'node-a', ['v6'], 2, 1]);
  });
  it("is the one table: the local store's errors, usePodCidr's and errno errors map here too", () => {
    const cases: [Error, number, number][] = [
      [new UnsafeFileError('/d/net/10.0.0.2', 'a symbolic link'), CniCode.IoFailure, CniCode.IoFailure],
      [new FileIoError('write', '/d/net/.podipam-reserve.tmp', 'ENOSPC: no space left'), CniCode.IoFailure, CniCode.IoFailure],
      [new LockTimeoutError('/d/net/lock', 10), CniCode.TryAgainLater, CniCode.NotAvailable],
      [new PodCidrNotAssignedError('node-a', 'no-cidr', 'memory:'), CniCode.TryAgainLater, CniCode.NotAvailable],
      [Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES' }), CniCode.IoFailure, CniCode.IoFailure],
      [new TypeError('boom'), CniCode.Internal, CniCode.Internal],
    ];
    for (const [e, add, status] of cases) {
      assert.equal(cniErrorOf(e).code, add, e.message);
      assert.equal(cniErrorOf(e, 'STATUS').code, status, e.message);
      assert.equal(cniErrorOf(e).msg, e.message);
    }
  });
});
