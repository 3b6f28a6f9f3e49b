import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validatePoolSpec } from '../records/pool-record.js';
import { NamedPools } from './named-pools.js';

// Sorted by name, as ClusterSnapshot.pools is.
const pools = [
  validatePoolSpec({ name: 'blue', cidr: '10.2.0.0/24' }),
  { ...validatePoolSpec({ name: 'blue-off', cidr: '10.4.0.0/24' }), disabled: true },
  validatePoolSpec({ name: 'blue6', cidr: 'fd00:2::/120', blockSize: 124 }),
  validatePoolSpec({ name: 'zoned', cidr: '10.3.0.0/24', nodeSelector: 'zone=b' }),
];
const all = () => true;
const notZoned = (p: { name: string }) => p.name !== 'zoned';

test('NamedPools: names, CIDRs and patterns; per family when the request says so', () => {
  const n = new NamedPools(pools, { pools: ['blue*', '10.3.0.0/24'], poolsByFamily: { 4: ['10.3.0.0/24', 'blue*'], 6: ['blue*'] } });
  assert.deepEqual(
    n.of('blue*').map((p) => p.name),
    ['blue', 'blue-off', 'blue6'],
    'a pattern: every match in name order',
  );
  assert.deepEqual(
    n.of('10.3.0.0/24').map((p) => p.name),
    ['zoned'],
  );
  assert.deepEqual(
    n.forFamily(4).map((p) => p.name),
    ['zoned', 'blue', 'blue-off', 'blue6'],
    "the family filter is the caller's (candidates)",
  );
  assert.deepEqual(
    n.forFamily(6).map((p) => p.name),
    ['blue', 'blue-off', 'blue6'],
  );
  assert.deepEqual(new NamedPools(pools, { pools: ['blue6'], poolsByFamily: { 6: ['blue6'] } }).forFamily(4), [], 'a family without a list: none');
  assert.equal(new NamedPools(pools, {}).forFamily(4).length, 4, 'no pools named: every pool');
});

test('NamedPools: why an annotated entry cannot serve', () => {
  const n = new NamedPools(pools, {
    pools: ['blue6', 'nope', 'x*', 'z*', 'blue-*', 'blue6*'],
    poolsByFamily: { 4: ['blue6', 'nope', 'x*', 'z*', 'blue-*', 'blue6*'] },
  });
  assert.equal(n.placedProblem('blue6', 'n1', all), 'pool "blue6" is an IPv6 pool, named for IPv4');
  assert.equal(n.placedProblem('nope', 'n1', all), 'pool "nope" does not exist');
  assert.equal(n.placedProblem('x*', 'n1', all), 'pool pattern "x*" matches no pool');
  assert.equal(n.placedProblem('blue6*', 'n1', all), 'pool pattern "blue6*" matches no IPv4 pool (it matches blue6)');
  assert.equal(n.placedProblem('z*', 'n1', all), undefined);
  assert.equal(
    n.placedProblem('z*', 'n1', notZoned),
    'pool pattern "z*" matches no pool that is enabled and selects node "n1" (it matches zoned: not selecting the node)',
  );
  assert.equal(
    n.placedProblem('blue-*', 'n1', all),
    'pool pattern "blue-*" matches no pool that is enabled and selects node "n1" (it matches blue-off: disabled)',
  );
  const plain = new NamedPools(pools, { pools: ['zoned', 'blue-off'] });
  assert.match(plain.placedProblem('zoned', 'n1', notZoned)!, /^pool "zoned" does not select node "n1" \(nodeSelector "zone=b"\)$/);
  assert.equal(plain.placedProblem('blue-off', 'n1', all), 'pool "blue-off" is disabled');
});
