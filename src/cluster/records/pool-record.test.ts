import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatPrefix } from '../../ip/index.js';
import { validatePoolSpec } from './pool-record.js';

test('pool spec: multicast, loopback, unspecified and IPv4-mapped CIDRs are refused, naming the kind', () => {
  const cases: [string, RegExp][] = [
    ['224.0.0.0/4', /overlaps multicast 224\.0\.0\.0\/4; pod addresses must be unicast/],
    ['239.1.0.0/16', /multicast/],
    ['127.0.0.0/8', /loopback 127\.0\.0\.0\/8/],
    ['127.10.0.0/16', /loopback/],
    ['0.0.0.0/8', /unspecified/],
    ['0.0.0.0/0', /overlaps/],
    ['ff00::/8', /multicast ff00::\/8/],
    ['ff02::/16', /multicast/],
    ['::1/128', /loopback ::1\/128/],
    ['::/128', /the unspecified address ::\/128/],
    ['::/64', /overlaps/],
    ['::ffff:0:0/96', /IPv4-mapped/],
    ['::ffff:10.0.0.0/104', /"::ffff:10\.0\.0\.0\/104": an IPv4-mapped IPv6 CIDR is not a pool; for IPv4 write 10\.0\.0\.0\/8/],
  ];
  for (const [cidr, message] of cases) {
    assert.throws(
      () => validatePoolSpec({ name: 'p', cidr }),
      (e: unknown) => e instanceof RangeError && e.message.includes(`"${cidr}"`) && message.test(e.message),
      cidr,
    );
  }
  for (const cidr of ['10.0.0.0/8', '223.255.255.0/24', '1.0.0.0/24', 'fd00::/56', '2001:db8::/48', '100::/64']) {
    assert.equal(formatPrefix(validatePoolSpec({ name: 'p', cidr }).cidr), cidr);
  }
});
