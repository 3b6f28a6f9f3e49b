import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { NetConf } from '../cni/types.js';
import type { CachedPod, PodDirectory } from '../model/pod-directory.js';
import { PlacementError } from '../model/placement.js';
import { stickyHoldOf } from './cluster-sticky.js';

const conf = { cniVersion: '1.0.0', name: 'net', ipam: {}, raw: {} } as NetConf;
const pod = { namespace: 'db', name: 'db-0', uid: 'u1' };
const req = (over: { podAnnotations?: Record<string, string>; pod?: typeof pod | undefined } = {}) => ({ conf, ifname: 'eth0', pod, ...over });
const cache = (ownerKind: string | undefined, ns: Record<string, string> = {}): PodDirectory => ({
  synced: true,
  pod: (n, name): CachedPod | undefined =>
    n === 'db' && name === 'db-0' ? { namespace: n, name, uid: 'u1', annotations: {}, ownerKind, node: 'n1' } : undefined,
  namespaceAnnotations: () => ns,
});

describe('stickyHoldOf', () => {
  it('is the hold handle for podipam.io/sticky "true", undefined for "false" or no annotation', () => {
    assert.equal(stickyHoldOf(req({ podAnnotations: { 'podipam.io/sticky': 'true' } }), undefined, 600_000), 'sticky:net:db:db-0:eth0');
    assert.equal(stickyHoldOf(req({ podAnnotations: { 'podipam.io/sticky': 'false' } }), undefined, 600_000), undefined);
    assert.equal(stickyHoldOf(req(), undefined, 600_000), undefined);
  });

  it('is on for a StatefulSet pod in the cache unless an annotation (pod or namespace) says "false"', () => {
    assert.equal(stickyHoldOf(req(), cache('StatefulSet'), 600_000), 'sticky:net:db:db-0:eth0');
    assert.equal(stickyHoldOf(req(), cache('ReplicaSet'), 600_000), undefined);
    assert.equal(stickyHoldOf(req({ podAnnotations: { 'podipam.io/sticky': 'false' } }), cache('StatefulSet'), 600_000), undefined);
    assert.equal(stickyHoldOf(req(), cache('StatefulSet', { 'podipam.io/sticky': 'false' }), 600_000), undefined);
    assert.equal(stickyHoldOf(req(), cache('ReplicaSet', { 'podipam.io/sticky': 'true' }), 600_000), 'sticky:net:db:db-0:eth0');
  });

  it('is never on without a pod name or with stickyFor 0; a malformed value throws PlacementError', () => {
    assert.equal(stickyHoldOf(req({ pod: undefined, podAnnotations: { 'podipam.io/sticky': 'true' } }), undefined, 600_000), undefined);
    assert.equal(stickyHoldOf(req({ podAnnotations: { 'podipam.io/sticky': 'true' } }), cache('StatefulSet'), 0), undefined);
    assert.throws(() => stickyHoldOf(req({ podAnnotations: { 'podipam.io/sticky': 'yes' } }), undefined, 600_000), PlacementError);
  });
});
