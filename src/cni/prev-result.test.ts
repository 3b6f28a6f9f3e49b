import { test } from 'node:test';
import assert from 'node:assert/strict';
import { prevResultAddrs, prevResultOf } from './prev-result.js';
import { formatAddr } from '../ip/addr.js';

test('prevResultOf reads every version into the 1.x shape', () => {
  const v1 = { cniVersion: '1.0.0', ips: [{ address: '10.1.0.2/24', gateway: '10.1.0.1' }], routes: [{ dst: '0.0.0.0/0' }], dns: {} };
  assert.deepEqual(prevResultOf(v1), { ips: [{ address: '10.1.0.2/24', gateway: '10.1.0.1' }], routes: [{ dst: '0.0.0.0/0' }], dns: {} });
  const v04 = { cniVersion: '0.4.0', ips: [{ version: '6', address: 'fd00::2/64' }] };
  assert.deepEqual(prevResultOf(v04), { ips: [{ address: 'fd00::2/64' }] });
  const v02 = { cniVersion: '0.2.0', ip4: { ip: '10.1.0.2/24', gateway: '10.1.0.1', routes: [{ dst: '0.0.0.0/0' }] }, ip6: { ip: 'fd00::2/64' } };
  assert.deepEqual(prevResultOf(v02), { ips: [{ address: '10.1.0.2/24', gateway: '10.1.0.1' }, { address: 'fd00::2/64' }], routes: [{ dst: '0.0.0.0/0' }] });
  assert.equal(prevResultOf(undefined), undefined);
  assert.equal(prevResultOf('x'), undefined);
});

test('prevResultAddrs keeps the text and skips what does not parse', () => {
  const got = prevResultAddrs({ ips: [{ address: '10.1.0.2/24' }, { address: 'nonsense' }, { address: 7 }, null, { address: 'FD00::2/64' }] });
  assert.deepEqual(
    got.map((a) => [a.text, formatAddr(a.addr)]),
    [
      ['10.1.0.2/24', '10.1.0.2'],
      ['FD00::2/64', 'fd00::2'],
    ],
  );
  assert.deepEqual(
    prevResultAddrs({ ip4: { ip: '192.0.2.9/24' } }).map((a) => formatAddr(a.addr)),
    ['192.0.2.9'],
  );
});
