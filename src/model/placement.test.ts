import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatAddr } from '../ip/index.js';
import { ANNOTATION, MAX_PLACEMENT_BYTES, MAX_PLACEMENT_NAMES, PlacementError, parsePlacement } from './placement.js';
import { parsePodRef, podArgsProblem, podRefOfArgs } from './pod-ref.js';

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
    assert.throws(
      () => parsePlacement(pod, ann, undefined),
      (e: unknown) => e instanceof PlacementError && e.failure === 'invalid-config' && re.test(e.message),
      JSON.stringify(ann),
    );
  }
  assert.throws(() => parsePlacement(pod, undefined, { [ANNOTATION.ip]: 'x' }), /on namespace shop \(pod shop\/web-0\)/);
});

test("precedence: the pod's level over the namespace's in every family; on a level podipam's > Calico's > Cilium's > Spiderpool's", () => {
  const own = { [ANNOTATION.pools]: 'own' };
  const calico = { [ANNOTATION.calicoIpv4Pools]: '["calico"]' };
  const cilium = { [ANNOTATION.ciliumIpPool]: 'cilium' };
  const spider = { [ANNOTATION.spiderpoolIppool]: '{"ipv4":["spider"]}' };
  const spiderNs = { [ANNOTATION.spiderpoolDefaultIpv4]: '["spider-ns"]' };
  const pools = (podAnn: Record<string, string> | undefined, nsAnn?: Record<string, string>) => {
    const p = parsePlacement(pod, podAnn, nsAnn, 'eth0').pools;
    return p && `${p.on}: ${p.parsed.join(',')}`;
  };
  assert.equal(pools({ ...own, ...calico, ...cilium, ...spider }), 'pod shop/web-0: own');
  assert.equal(pools({ ...calico, ...cilium, ...spider }), 'pod shop/web-0: calico');
  assert.equal(pools({ ...cilium, ...spider }), 'pod shop/web-0: cilium');
  assert.equal(pools(spider), 'pod shop/web-0: spider');
  // Any family's annotation on the pod hides every one of the namespace's, podipam's own included.
  assert.equal(pools(spider, { ...own, ...cilium }), 'pod shop/web-0: spider');
  assert.equal(pools(cilium, own), 'pod shop/web-0: cilium');
  assert.equal(pools({ other: 'x' }, { ...cilium, ...spiderNs }), 'namespace shop: cilium');
  assert.equal(pools(undefined, spiderNs), 'namespace shop: spider-ns');
  // Each of Spiderpool's is read where Spiderpool reads it.
  assert.equal(pools(spiderNs, { ...cilium }), 'namespace shop: cilium', "a namespace default on a pod is not the pod's");
  assert.equal(pools(undefined, spider), undefined, "a pod's ippool on a namespace is not read");
  // A lower-ranked annotation is ignored, even malformed; one of equal rank is read (and checked).
  assert.equal(pools({ ...calico, [ANNOTATION.ciliumIpPool]: 'not valid' }), 'pod shop/web-0: calico');
  assert.throws(() => parsePlacement(pod, { ...cilium, [ANNOTATION.ciliumIpv4Pool]: 'not valid' }, undefined), /ipv4-pool="not valid"/);
  // Conflicts of equal rank stay code 7 naming both, as before.
  assert.throws(() => parsePlacement(pod, { ...own, [ANNOTATION.ip]: '10.0.0.1' }, undefined), /podipam\.io\/ip=.*cannot be combined with podipam\.io\/pools/);
  assert.throws(
    () => parsePlacement(pod, { ...calico, [ANNOTATION.calicoIpAddrs]: '["10.0.0.1"]' }, undefined),
    /ipAddrs=.*cannot be combined with cni\.projectcalico\.org\/ipv4pools/,
  );
  // But its size is checked, whichever is read: no annotation is decoded past the limit.
  assert.throws(() => parsePlacement(pod, { ...own, [ANNOTATION.spiderpoolIppools]: 'x'.repeat(20000) }, undefined), /ippools=.*longer than the 16384 bytes/);
  // The per-family pools reach the request.
  assert.deepEqual(parsePlacement(pod, { [ANNOTATION.ciliumIpv6Pool]: 'b6', [ANNOTATION.ciliumIpv4Pool]: 'b4' }, undefined).pools?.byFamily, {
    4: ['b4'],
    6: ['b6'],
  });
  assert.equal(parsePlacement(pod, own, undefined).pools?.byFamily, undefined, "podipam's list serves every family");
});

test('pod refs from CNI_ARGS and from text', () => {
  assert.deepEqual(
    podRefOfArgs(
      new Map([
        ['K8S_POD_NAMESPACE', 'a'],
        ['K8S_POD_NAME', 'b'],
        ['K8S_POD_UID', 'c'],
      ]),
    ),
    { namespace: 'a', name: 'b', uid: 'c' },
  );
  assert.equal(podRefOfArgs(new Map([['K8S_POD_NAME', 'b']])), undefined);
  assert.deepEqual(parsePodRef('--pod', 'kube-system/coredns-1.x'), { namespace: 'kube-system', name: 'coredns-1.x' });
  assert.throws(() => parsePodRef('--pod', 'nope'), /invalid --pod "nope": want NAMESPACE\/NAME/);
});

test("pod and namespace names from CNI_ARGS follow Kubernetes' rules", () => {
  const args = (ns: string, name: string) =>
    new Map([
      ['K8S_POD_NAMESPACE', ns],
      ['K8S_POD_NAME', name],
    ]);
  assert.equal(podArgsProblem(args('kube-system', 'coredns-5d78c9869d-abcde')), undefined);
  assert.equal(podArgsProblem(args('a'.repeat(63), `${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(63)}.${'e'.repeat(61)}`)), undefined);
  assert.equal(podArgsProblem(new Map()), undefined);
  assert.equal(podArgsProblem(args('a'.repeat(64), 'p'))?.field, 'K8S_POD_NAMESPACE');
  assert.equal(podArgsProblem(args('a.b', 'p'))?.field, 'K8S_POD_NAMESPACE', 'a namespace is a label: no dots');
  assert.equal(podArgsProblem(args('ns', 'Web'))?.field, 'K8S_POD_NAME');
  assert.equal(podArgsProblem(args('ns', 'x'.repeat(254)))?.field, 'K8S_POD_NAME');
  assert.deepEqual(podArgsProblem(args('ns', 'web\u001b]0;pwned\u0007')), {
    field: 'K8S_POD_NAME',
    value: 'web\u001b]0;pwned\u0007',
    rule: podArgsProblem(args('ns', 'A'))!.rule,
  });
});

test('a list of 37,000 pool names (under the 256 KiB annotation limit) is refused at once, naming the annotation', () => {
  const names = (n: number) => Array.from({ length: n }, (_, i) => `p${i}`);
  const addrs = (n: number) => Array.from({ length: n }, (_, i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
  const cases: [string, string][] = [
    [ANNOTATION.pools, names(37000).join(',')],
    [ANNOTATION.calicoIpv4Pools, JSON.stringify(names(28000))],
    [ANNOTATION.calicoIpAddrs, JSON.stringify(addrs(16000))],
    [ANNOTATION.ip, addrs(20000).join(',')],
    [ANNOTATION.ciliumIpPool, 'p'.repeat(200_000)],
    [ANNOTATION.spiderpoolIppool, JSON.stringify({ ipv4: names(28000) })],
    [ANNOTATION.spiderpoolIppools, JSON.stringify([{ interface: 'eth0', ipv4: names(28000) }])],
  ];
  for (const [key, value] of cases) {
    assert.ok(value.length < 256 * 1024, `${key}: a value Kubernetes can store (${value.length} bytes)`);
    const t = cpuMs();
    assert.throws(
      () => parsePlacement(pod, { [key]: value }, undefined),
      (e: unknown) =>
        e instanceof PlacementError &&
        e.failure === 'invalid-config' &&
        e.message.startsWith(`annotation ${key}=`) &&
        /longer than the 16384 bytes allowed/.test(e.message) &&
        e.message.length < 600,
      key,
    );
    const ms = cpuMs() - t;
    // Quadratic duplicate checks took over a second of CPU here; the refusal reads the length only.
    assert.ok(ms < 250, `${key}: refused in ${ms.toFixed(1)} ms`);
  }
});

/** This process's CPU time in ms (user + system): unlike the wall clock, not stretched while the machine runs others. */
function cpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

test('at most MAX_PLACEMENT_NAMES names and MAX_PLACEMENT_BYTES bytes; at the maximum the parse is linear', () => {
  const names = (n: number, len = 8) => Array.from({ length: n }, (_, i) => `p${String(i).padStart(len - 1, '0')}`);
  assert.equal(parsePlacement(pod, { [ANNOTATION.pools]: names(MAX_PLACEMENT_NAMES).join(',') }, undefined).pools?.parsed.length, MAX_PLACEMENT_NAMES);
  assert.throws(
    () => parsePlacement(pod, { [ANNOTATION.pools]: names(MAX_PLACEMENT_NAMES + 1).join(',') }, undefined),
    /podipam\.io\/pools=.*names 65 entries; at most 64 are allowed/,
  );
  assert.throws(
    () => parsePlacement(pod, { [ANNOTATION.calicoIpv6Pools]: JSON.stringify(names(MAX_PLACEMENT_NAMES + 1)) }, undefined),
    /ipv6pools=.*names 65 entries/,
  );
  // Bytes, not characters: 5462 three-byte characters are 16386 bytes.
  assert.throws(
    () => parsePlacement(pod, { [ANNOTATION.ipSet]: '€'.repeat(5462) }, undefined),
    /ip-set=.*value of 16386 bytes is longer than the 16384 bytes allowed/,
  );
  const exact = 'a'.repeat(MAX_PLACEMENT_BYTES);
  assert.throws(
    () => parsePlacement(pod, { [ANNOTATION.pools]: exact }, undefined),
    /is not a pool name/,
    'at the byte limit the value is parsed (and found wanting)',
  );
  // 64 names of 250 characters (16 KiB) vs 4 of them: linear is at most 16x the work (less, with
  // the fixed cost of a call), quadratic 256x; the bound sits between, far from both. The work is
  // this thread's CPU time (best of 5), not the wall clock: a busy machine that preempts the test
  // stretches the wall time of one side only.
  const timeOf = (v: string): number => {
    let best = Infinity;
    for (let k = 0; k < 5; k++) {
      const t = cpuMs();
      for (let i = 0; i < 200; i++) parsePlacement(pod, { [ANNOTATION.pools]: v }, undefined);
      best = Math.min(best, cpuMs() - t);
    }
    return best;
  };
  const big = names(MAX_PLACEMENT_NAMES, 250).join(',');
  assert.ok(Buffer.byteLength(big) <= MAX_PLACEMENT_BYTES);
  const small = names(MAX_PLACEMENT_NAMES / 16, 250).join(',');
  timeOf(big);
  timeOf(small);
  const ratio = timeOf(big) / timeOf(small);
  assert.ok(ratio < 48, `16x the names took ${ratio.toFixed(1)}x the time`);
});

test('values are quoted with control characters escaped and cut', () => {
  assert.throws(
    () => parsePlacement(pod, { [ANNOTATION.pools]: 'ok,\u001b[2Jbad\u009b' }, undefined),
    (e: unknown) =>
      e instanceof Error &&
      e.message.includes('"ok,\\u001b[2Jbad\\u009b"') &&
      e.message.includes('"\\u001b[2Jbad\\u009b" is not a pool name') &&
      ![...e.message].some((c) => c.charCodeAt(0) < 0x20 || (c.charCodeAt(0) >= 0x7f && c.charCodeAt(0) <= 0x9f)),
  );
  assert.throws(() => parsePlacement(pod, { [ANNOTATION.ipSet]: 'x'.repeat(1000) }, undefined), /ip-set="x{200}"… \(1000 characters\) on pod/);
});
