import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SPIDERPOOL_ANNOTATION as S, spiderpoolNamespacePools, spiderpoolPodPools } from './spiderpool-placement.js';
import { PlacementError } from './placement-source.js';
import { MAX_PLACEMENT_NAMES } from './placement-values.js';

const pod = (ann: Record<string, string>, ifname = 'eth0') => spiderpoolPodPools(ann, 'pod shop/web-0', 'shop/web-0', ifname);
const ns = (ann: Record<string, string>) => spiderpoolNamespacePools(ann, 'namespace shop', 'shop/web-0');
const refused = (fn: () => unknown, re: RegExp, what: string) =>
  assert.throws(fn, (e: unknown) => e instanceof PlacementError && e.failure === 'invalid-config' && re.test(e.message), what);

test("ippool: per-family lists in order, an optional interface that must be the call's", () => {
  assert.equal(pod({ other: 'x' }), undefined);
  const p = pod({ [S.ippool]: '{"ipv4":["v4a","v4b"],"ipv6":["v6a"]}' })!;
  assert.deepEqual(p.byFamily, { 4: ['v4a', 'v4b'], 6: ['v6a'] });
  assert.deepEqual(p.parsed, ['v4a', 'v4b', 'v6a']);
  assert.equal(p.annotation, S.ippool);
  assert.deepEqual(pod({ [S.ippool]: '{"interface":"eth0","ipv4":["v4a"],"ipv6":[]}' })!.byFamily, { 4: ['v4a'] }, 'an empty family: no address of it');
  assert.deepEqual(pod({ [S.ippool]: '{"ipv6":["v6-*"],"cleangateway":false}' })!.byFamily, { 6: ['v6-*'] }, 'patterns are kept for the back end');
  refused(() => pod({ [S.ippool]: '{"interface":"net1","ipv4":["a"]}' }), /ippool=.*is for interface "net1", not "eth0"/, 'another interface');
});

test("ippools: the entry of the call's interface; one is required, each interface once", () => {
  const v = '[{"interface":"eth0","ipv4":["a"]},{"interface":"net1","ipv4":["b"],"ipv6":["b6"]}]';
  assert.deepEqual(pod({ [S.ippools]: v })!.byFamily, { 4: ['a'] });
  assert.deepEqual(pod({ [S.ippools]: v }, 'net1')!.byFamily, { 4: ['b'], 6: ['b6'] });
  assert.deepEqual(pod({ [S.ippools]: v, [S.ippool]: '{"ipv4":["c"]}' })!.byFamily, { 4: ['a'] }, 'ippools wins over ippool, as in Spiderpool');
  refused(() => pod({ [S.ippools]: v }, 'net2'), /ippools=.*names no entry for interface "net2"/, 'no entry for the call');
  refused(() => pod({ [S.ippools]: '[{"ipv4":["a"]}]' }), /entry 1: names no "interface"/, 'interface required');
  refused(
    () => pod({ [S.ippools]: '[{"interface":"eth0","ipv4":["a"]},{"interface":"eth0","ipv4":["b"]}]' }),
    /entry 2: interface "eth0" is named twice/,
    'twice',
  );
  refused(() => pod({ [S.ippools]: '[]' }), /names no interface/, 'empty list');
  refused(() => pod({ [S.ippools]: '{"interface":"eth0","ipv4":["a"]}' }), /want a JSON list of objects/, 'an object, not a list');
});

test('namespace defaults: JSON lists per family', () => {
  assert.equal(ns({ [S.ippool]: '{"ipv4":["a"]}' }), undefined, 'ippool is a pod annotation only');
  const d = ns({ [S.defaultIpv4]: '["ns-v4a","ns-v4b"]', [S.defaultIpv6]: '["ns-v6"]' })!;
  assert.deepEqual(d.byFamily, { 4: ['ns-v4a', 'ns-v4b'], 6: ['ns-v6'] });
  assert.equal(d.annotation, `${S.defaultIpv4}, ${S.defaultIpv6}`);
  assert.deepEqual(ns({ [S.defaultIpv6]: '["x?"]' })!.byFamily, { 6: ['x?'] });
  refused(
    () => ns({ [S.defaultIpv4]: '"a"' }),
    /default-ipv4-ippool="\\"a\\"" on namespace shop \(pod shop\/web-0\): want a JSON list of pool names/,
    'a string',
  );
  refused(() => ns({ [S.defaultIpv4]: '[]' }), /names no pool/, 'empty');
  refused(() => ns({ [S.defaultIpv4]: '[1]' }), /want a JSON list of pool names/, 'a number');
});

test('every malformed shape is code 7 naming the annotation and what is wrong', () => {
  const cases: [string, RegExp][] = [
    ['{"ipv4":["a"]', /not JSON: want a JSON object such as/],
    ['["a"]', /want a JSON object such as \{"interface"/],
    ['null', /want a JSON object/],
    ['{"ipv4pools":["a"]}', /unknown field "ipv4pools" \(want "interface", "ipv4", "ipv6", "cleangateway"\)/],
    ['{"ipv4":"a"}', /"ipv4" must be a JSON list of pool names/],
    ['{"ipv4":[1]}', /"ipv4" must be a JSON list of pool names/],
    ['{"ipv6":[]}', /names no pool/],
    ['{}', /names no pool/],
    ['{"interface":7,"ipv4":["a"]}', /"interface" must be a string/],
    ['{"ipv4":["a"],"cleangateway":true}', /"cleangateway": true is not supported/],
    ['{"ipv4":["a"],"cleangateway":"no"}', /"cleangateway" must be true or false/],
    ['{"ipv4":["a","a"]}', /"ipv4": names "a" twice/],
    ['{"ipv4":["Bad_Name"]}', /"ipv4": "Bad_Name" is not a pool name/],
    ['{"ipv4":["zone-[ab"]}', /"zone-\[ab" is not a pool-name pattern: the "\[" at 6 is not closed/],
    ['{"ipv4":["\\u001b[2J"]}', /"\\u001b\[2J" is not a pool-name pattern/],
  ];
  for (const [v, re] of cases)
    refused(() => pod({ [S.ippool]: v }), new RegExp(`^annotation ipam\\.spidernet\\.io/ippool=.* on pod shop/web-0: .*${re.source}`), v);
});

test('bounded: at most MAX_PLACEMENT_NAMES pools and objects in one annotation', () => {
  const names = (n: number, p = 'p') => Array.from({ length: n }, (_, i) => `${p}${i}`);
  assert.equal(pod({ [S.ippool]: JSON.stringify({ ipv4: names(32), ipv6: names(32, 'q') }) })!.parsed.length, MAX_PLACEMENT_NAMES);
  refused(() => pod({ [S.ippool]: JSON.stringify({ ipv4: names(33), ipv6: names(32, 'q') }) }), /names 65 entries; at most 64/, 'pools over both families');
  refused(() => pod({ [S.ippool]: JSON.stringify({ ipv4: names(65) }) }), /names 65 entries/, 'one family');
  const many = names(65).map((n) => ({ interface: n, ipv4: ['a'] }));
  refused(() => pod({ [S.ippools]: JSON.stringify(many) }), /ippools=.*names 65 entries/, 'objects');
  const spread = names(40).map((n) => ({ interface: n, ipv4: ['a', 'b'] }));
  refused(() => pod({ [S.ippools]: JSON.stringify(spread) }, 'p0'), /names 80 entries/, 'pools over all objects');
});
