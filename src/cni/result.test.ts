import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IpamResult } from './types.js';
import { formatResult, resultForVersion } from './result.js';

const dual: IpamResult = {
  ips: [
    { address: '10.1.0.2/24', gateway: '10.1.0.1' },
    { address: 'fd00::2/64', gateway: 'fd00::1' },
    { address: '10.2.0.2/24', gateway: '10.2.0.1' },
  ],
  routes: [{ dst: '0.0.0.0/0' }, { dst: '::/0', gw: 'fd00::1', mtu: 1400, table: 0 }],
};

test('1.0.0 results: plain ips, routes without 1.1 keys, dns always present', () => {
  assert.deepEqual(resultForVersion('1.0.0', dual), {
    cniVersion: '1.0.0',
    ips: dual.ips.map((i) => ({ version: undefined, ...i })),
    routes: [
      { dst: '0.0.0.0/0', gw: undefined, mtu: undefined, advmss: undefined, priority: undefined, table: undefined, scope: undefined },
      { dst: '::/0', gw: 'fd00::1', mtu: undefined, advmss: undefined, priority: undefined, table: undefined, scope: undefined },
    ],
    dns: { nameservers: undefined, domain: undefined, search: undefined, options: undefined },
  });
});

test('1.1.0 results keep route mtu/table; 0.3.x/0.4.0 add version per ip', () => {
  const r11 = JSON.parse(formatResult('1.1.0', dual));
  assert.deepEqual(r11.routes[1], { dst: '::/0', gw: 'fd00::1', mtu: 1400, table: 0 });
  for (const v of ['0.3.0', '0.3.1', '0.4.0']) {
    const r = JSON.parse(formatResult(v, dual));
    assert.equal(r.cniVersion, v);
    assert.deepEqual(
      r.ips.map((i: { version: string }) => i.version),
      ['4', '6', '4'],
    );
    assert.equal(Object.keys(r.ips[0]).join(), 'version,address,gateway');
  }
});

test('0.2.0/0.1.0 results: first address per family, routes by family of dst', () => {
  const text = formatResult('0.2.0', dual);
  assert.equal(
    text,
    '{\n    "cniVersion": "0.2.0",\n    "ip4": {\n        "ip": "10.1.0.2/24",\n        "gateway": "10.1.0.1",\n' +
      '        "routes": [\n            {\n                "dst": "0.0.0.0/0"\n            }\n        ]\n    },\n' +
      '    "ip6": {\n        "ip": "fd00::2/64",\n        "gateway": "fd00::1",\n        "routes": [\n            {\n' +
      '                "dst": "::/0",\n                "gw": "fd00::1"\n            }\n        ]\n    },\n    "dns": {}\n}',
  );
  assert.equal(JSON.parse(formatResult('', { ips: [{ address: '10.0.0.2/24' }] })).cniVersion, '0.1.0');
});

test('empty routes are omitted, DNS members only when set', () => {
  const text = formatResult('1.0.0', {
    ips: [{ address: '10.0.0.2/24', gateway: '10.0.0.1' }],
    routes: [],
    dns: { nameservers: ['1.1.1.1'], domain: '', search: [], options: ['ndots:5'] },
  });
  assert.equal(
    text,
    '{\n    "cniVersion": "1.0.0",\n    "ips": [\n        {\n            "address": "10.0.0.2/24",\n            "gateway": "10.0.0.1"\n' +
      '        }\n    ],\n    "dns": {\n        "nameservers": [\n            "1.1.1.1"\n        ],\n        "options": [\n            "ndots:5"\n        ]\n    }\n}',
  );
});
