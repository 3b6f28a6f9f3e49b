import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CILIUM_ANNOTATION as C, ciliumPools } from './cilium-placement.js';
import { PlacementError } from './placement-source.js';

const on = 'pod shop/web-0';
const parse = (ann: Record<string, string>) => ciliumPools(ann, on, 'shop/web-0');

test("Cilium's annotations: ip-pool for both families, ipv4-pool / ipv6-pool win for theirs", () => {
  assert.equal(parse({ other: 'x' }), undefined);
  const both = parse({ [C.ipPool]: 'green' })!;
  assert.deepEqual(both.parsed, ['green']);
  assert.deepEqual(both.byFamily, { 4: ['green'], 6: ['green'] });
  assert.equal(both.annotation, C.ipPool);
  const v4 = parse({ [C.ipv4Pool]: 'blue' })!;
  assert.deepEqual(v4.byFamily, { 4: ['blue'] }, 'a family none names gets no address');
  const mixed = parse({ [C.ipPool]: 'green', [C.ipv4Pool]: 'blue' })!;
  assert.deepEqual(mixed.byFamily, { 4: ['blue'], 6: ['green'] });
  assert.deepEqual(mixed.parsed, ['blue', 'green']);
  assert.equal(mixed.annotation, `${C.ipPool}, ${C.ipv4Pool}`);
  const split = parse({ [C.ipPool]: 'green', [C.ipv4Pool]: 'blue', [C.ipv6Pool]: 'blue6' })!;
  assert.deepEqual(split.byFamily, { 4: ['blue'], 6: ['blue6'] }, 'ip-pool is unused when both families have their own');
  assert.equal(split.annotation, `${C.ipv4Pool}, ${C.ipv6Pool}`);
  assert.equal(split.value, 'blue, blue6');
});

test("Cilium's annotations: one pool name each, else code 7 naming the annotation", () => {
  const cases: [Record<string, string>, RegExp][] = [
    [{ [C.ipPool]: '' }, /ip-pool="" on pod shop\/web-0: names no pool/],
    [{ [C.ipPool]: 'a,b' }, /ip-pool="a,b".*"a,b" is not a pool name.*one pool per annotation/],
    [{ [C.ipv6Pool]: 'Blue' }, /ipv6-pool="Blue"/],
    [{ [C.ipv4Pool]: 'ok', [C.ipPool]: 'x y' }, /ip-pool="x y"/],
    [{ [C.ipv4Pool]: 'x'.repeat(254) }, /ipv4-pool="x{200}"… \(254 characters\).*not a pool name/],
  ];
  for (const [ann, re] of cases)
    assert.throws(
      () => parse(ann),
      (e: unknown) => e instanceof PlacementError && e.failure === 'invalid-config' && re.test(e.message),
      JSON.stringify(ann),
    );
});
