import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatAddr } from '../ip/index.js';
import { ANNOTATION, PlacementError, parsePlacement } from './placement.js';
import { parsePodRef, podRefOfArgs } from './pod-ref.js';

const pod = { namespace: 'shop', name: 'web-0', uid: 'u1' };

test('pod annotations win over the namespace, as a whole level', () => {
  const p = parsePlacement(pod, { [ANNOTATION.ip]: '10.0.0.5, fd00::5' }, { [ANNOTATION.pools]: 'a,b' });
  assert.deepEqual(p.ips?.parsed.map(formatAddr), ['10.0.0.5', 'fd00::5']);
  assert.equal(p.pools, undefined);
  assert.equal(p.ips?.on, 'pod shop/web-0');
  const n = parsePlacement(pod, { other: 'x' }, { [ANNOTATION.pools]: 'a, b' });
  assert.deepEqual(n.pools?.parsed, ['a', 'b']);
  assert.equal(n.pools?.on, 'namespace shop');
});

test("podipam's annotations win over Calico's; Calico's lists take names and CIDRs", () => {
  const both = parsePlacement(pod, { [ANNOTATION.ipSet]: 'db', [ANNOTATION.calicoIpAddrs]: '["10.0.0.9"]' }, undefined);
  assert.equal(both.ipSet?.parsed, 'db');
  assert.equal(both.ips, undefined);
  const cal = parsePlacement(pod, { [ANNOTATION.calicoIpv4Pools]: '["blue","10.9.0.0/16"]', [ANNOTATION.calicoIpv6Pools]: '["fd00:0::/48"]' }, undefined);
  assert.deepEqual(cal.pools?.parsed, ['blue', '10.9.0.0/16', 'fd00::/48']);
  assert.equal(cal.pools?.annotation, `${ANNOTATION.calicoIpv4Pools}, ${ANNOTATION.calicoIpv6Pools}`);
  assert.deepEqual(parsePlacement(pod, { [ANNOTATION.calicoIpAddrs]: '["10.0.0.9"]' }, undefined).ips?.parsed.map(formatAddr), ['10.0.0.9']);
});

test('sticky comes from the pod, else the namespace, independently of placement', () => {
  assert.equal(parsePlacement(pod, { [ANNOTATION.sticky]: 'false' }, { [ANNOTATION.sticky]: 'true' }).sticky?.parsed, false);
  assert.equal(parsePlacement(pod, { [ANNOTATION.pools]: 'a' }, { [ANNOTATION.sticky]: 'true' }).sticky?.parsed, true);
  assert.deepEqual(parsePlacement(pod, undefined, undefined), {});
});

test('malformed values fail naming the annotation, the object and the value', () => {
  const cases: [Record<string, string>, RegExp][] = [
    [{ [ANNOTATION.ip]: '10.0.0.1,10.0.0.2' }, /podipam\.io\/ip="10\.0\.0\.1,10\.0\.0\.2" on pod shop\/web-0: at most one address per family/],
    [{ [ANNOTATION.ip]: 'nope' }, /"nope" is not an IP address/],
    [{ [ANNOTATION.pools]: 'a,,b' }, /podipam\.io\/pools="a,,b".*"" is not a pool name/],
    [{ [ANNOTATION.pools]: 'a,a' }, /names "a" twice/],
    [{ [ANNOTATION.ipSet]: 'Bad_Set' }, /not an ip-set name/],
    [{ [ANNOTATION.sticky]: 'yes' }, /podipam\.io\/sticky="yes".*want "true" or "false"/],
    [{ [ANNOTATION.calicoIpv4Pools]: 'blue' }, /not JSON/],
    [{ [ANNOTATION.calicoIpv4Pools]: '["10.0.0.0/33"]' }, /is not a CIDR/],
    [{ [ANNOTATION.pools]: 'a', [ANNOTATION.ip]: '10.0.0.1' }, /cannot be combined with podipam\.io\/pools/],
  ];
  for (const [ann, re] of cases) {
    assert.throws(() => parsePlacement(pod, ann, undefined), (e: unknown) => e instanceof PlacementError && e.failure === 'invalid-config' && re.test(e.message), JSON.stringify(ann));
  }
  assert.throws(() => parsePlacement(pod, undefined, { [ANNOTATION.ip]: 'x' }), /on namespace shop \(pod shop\/web-0\)/);
});

test('pod refs from CNI_ARGS and from text', () => {
  assert.deepEqual(podRefOfArgs(new Map([['K8S_POD_NAMESPACE', 'a'], ['K8S_POD_NAME', 'b'], ['K8S_POD_UID', 'c']])), { namespace: 'a', name: 'b', uid: 'c' });
  assert.equal(podRefOfArgs(new Map([['K8S_POD_NAME', 'b']])), undefined);
  assert.deepEqual(parsePodRef('--pod', 'kube-system/coredns-1.x'), { namespace: 'kube-system', name: 'coredns-1.x' });
  assert.throws(() => parsePodRef('--pod', 'nope'), /invalid --pod "nope": want NAMESPACE\/NAME/);
});
