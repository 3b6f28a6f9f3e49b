import { test } from 'node:test';
import assert from 'node:assert/strict';
import { addr, addrAdd, addrEquals, compareAddr, familyMax, formatAddr, parseAddr, tryParseAddr } from './addr.js';

test('parseAddr reads dotted quads and rejects leading zeros, short forms and out-of-range parts', () => {
  assert.deepEqual(parseAddr('10.1.2.3'), { family: 4, value: 0x0a010203n });
  assert.deepEqual(parseAddr('0.0.0.0'), { family: 4, value: 0n });
  assert.deepEqual(parseAddr('255.255.255.255'), { family: 4, value: 0xffffffffn });
  for (const bad of ['010.1.2.3', '1.2.3', '1.2.3.4.5', '256.1.1.1', '1.2.3.-1', '', ' 1.2.3.4', '1.2.3.4 ', 'a.b.c.d']) {
    assert.throws(() => parseAddr(bad), TypeError, bad);
  }
});

test('parseAddr reads IPv6 in every spelling and maps ::ffff:a.b.c.d to IPv4 like Go', () => {
  assert.deepEqual(parseAddr('::'), { family: 6, value: 0n });
  assert.deepEqual(parseAddr('::1'), { family: 6, value: 1n });
  assert.equal(parseAddr('FD00:10:245:1:0:0:0:00AB').value, parseAddr('fd00:10:245:1::ab').value);
  assert.deepEqual(parseAddr('::ffff:10.0.0.1'), { family: 4, value: 0x0a000001n });
  assert.equal(parseAddr('64:ff9b::1.2.3.4').value, (0x64ff9bn << 96n) | 0x01020304n);
  for (const bad of ['1::2::3', ':::', '1:2:3:4:5:6:7:8:9', '1:2:3:4:5:6:7', '12345::', 'g::', '::1.2.3', 'fe80::1%eth0']) {
    assert.throws(() => parseAddr(bad), TypeError, bad);
  }
  assert.equal(tryParseAddr('nope'), undefined);
});

test('formatAddr writes RFC 5952 text, the same as Go net.IP.String()', () => {
  const cases: [string, string][] = [
    ['fd00:10:245:1:0:0:0:ab', 'fd00:10:245:1::ab'],
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'], // first of two equal runs
    ['2001:db8:0:1:1:1:1:1', '2001:db8:0:1:1:1:1:1'], // a single zero group is not compressed
    ['0:0:0:0:0:0:0:0', '::'],
    ['0:0:0:0:0:0:0:1', '::1'],
    ['1:0:0:0:0:0:0:0', '1::'],
    ['2001:DB8::A', '2001:db8::a'],
    ['1:0:0:2:0:0:0:3', '1:0:0:2::3'], // the longest run wins
  ];
  for (const [input, want] of cases) assert.equal(formatAddr(parseAddr(input)), want, input);
  assert.equal(formatAddr(parseAddr('192.168.0.1')), '192.168.0.1');
});

test('addr checks the value fits; addrAdd stays inside the family', () => {
  assert.throws(() => addr(4, 1n << 32n), RangeError);
  assert.throws(() => addr(6, -1n), RangeError);
  assert.equal(addrAdd(parseAddr('255.255.255.255'), 1n), undefined);
  assert.deepEqual(addrAdd(parseAddr('10.0.0.255'), 1n), parseAddr('10.0.1.0'));
  assert.equal(addrAdd({ family: 6, value: familyMax(6) }, 1n), undefined);
});

test('compareAddr orders IPv4 before IPv6, then by value', () => {
  const list = ['::1', '10.0.0.2', '10.0.0.1', '::'].map(parseAddr).sort(compareAddr).map(formatAddr);
  assert.deepEqual(list, ['10.0.0.1', '10.0.0.2', '::', '::1']);
  assert.ok(addrEquals(parseAddr('::ffff:1.2.3.4'), parseAddr('1.2.3.4')));
});
