import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CniError } from '../cni/errors.js';
import type { IpamRequest } from './ipam-backend.js';
import type { NetConf } from '../cni/types.js';
import { parseCniArgs } from '../cni/cni-args.js';
import { LocalBackend } from './local-backend.js';

const backend = new LocalBackend();

interface Net {
  readonly dir: string;
  conf(ipam: Record<string, unknown>, extra?: Record<string, unknown>): NetConf;
  req(conf: NetConf, id: string, ifname?: string, args?: string): IpamRequest;
  files(): string[];
  read(name: string): string;
}

function withNet(fn: (n: Net) => Promise<void>): () => Promise<void> {
  return async () => {
    const root = mkdtempSync(join(tmpdir(), 'podipam-local-'));
    const n: Net = {
      dir: join(root, 'net'),
      conf(ipam, extra = {}) {
        const raw = { cniVersion: '1.0.0', name: 'net', ipam: { type: 'podipam', dataDir: root, ...ipam }, ...extra };
        return { cniVersion: raw.cniVersion, name: 'net', ipam: raw.ipam, raw, prevResult: extra.prevResult };
      },
      req: (conf, id, ifname = 'eth0', args = '') => ({ containerId: id, ifname, cniArgs: parseCniArgs(args), conf }),
      files: () => readdirSync(join(root, 'net')).sort(),
      read: (name) => readFileSync(join(root, 'net', name), 'utf8'),
    };
    try {
      await fn(n);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  };
}

async function fails(p: Promise<unknown>, code: number, msg: string | RegExp) {
  await assert.rejects(p, (e: unknown) => {
    assert.ok(e instanceof CniError, String(e));
    assert.equal(e.code, code, e.msg);
    if (typeof msg === 'string') assert.equal(e.msg, msg);
    else assert.match(e.msg, msg);
    return true;
  });
}

const addrs = (r: { ips: readonly { address: string }[] }) => r.ips.map((i) => i.address);

test(
  'ADD, duplicate ADD, new ifname, CHECK, DEL (reference cases 3-8)',
  withNet(async (n) => {
    const c = n.conf({ ranges: [[{ subnet: '10.1.0.0/24' }]], routes: [{ dst: '0.0.0.0/0' }] });
    const r1 = await backend.add(n.req(c, 'c1'));
    assert.deepEqual(r1, { ips: [{ address: '10.1.0.2/24', gateway: '10.1.0.1' }], routes: [{ dst: '0.0.0.0/0' }], dns: undefined });
    assert.deepEqual(addrs(await backend.add(n.req(c, 'c2'))), ['10.1.0.3/24']);
    await fails(backend.add(n.req(c, 'c1')), 101, 'failed to allocate for range 0: 10.1.0.2 has been allocated to c1, duplicate allocation is not allowed');
    assert.deepEqual(addrs(await backend.add(n.req(c, 'c1', 'eth1'))), ['10.1.0.4/24']);
    await backend.check(n.req(c, 'c1'));
    await fails(backend.check(n.req(c, 'c9')), 102, 'host-local: Failed to find address added by container c9');
    await backend.del(n.req(c, 'c2'));
    await backend.del(n.req(c, 'c2'));
    await backend.del(n.req(c, 'c1', 'eth9'));
    assert.deepEqual(n.files(), ['10.1.0.2', '10.1.0.4', 'last_reserved_ip.0', 'lock']);
    assert.equal(n.read('10.1.0.4'), 'c1\r\neth1');
  }),
);

test(
  'exhaustion and round robin (reference cases 14, 15, 21)',
  withNet(async (n) => {
    const c = n.conf({ ranges: [[{ subnet: '192.168.5.0/24', rangeStart: '192.168.5.10', rangeEnd: '192.168.5.12' }]] });
    for (const [id, want] of [
      ['a', '192.168.5.10/24'],
      ['b', '192.168.5.11/24'],
      ['c', '192.168.5.12/24'],
    ] as const) {
      assert.deepEqual(addrs(await backend.add(n.req(c, id))), [want]);
    }
    await fails(backend.add(n.req(c, 'd')), 100, 'failed to allocate for range 0: no IP addresses available in range set: 192.168.5.10-192.168.5.12');
    await backend.del(n.req(c, 'a'));
    assert.deepEqual(addrs(await backend.add(n.req(c, 'd'))), ['192.168.5.10/24']);
    await backend.del(n.req(c, 'b'));
    await backend.del(n.req(c, 'c'));
    assert.deepEqual(addrs(await backend.add(n.req(c, 'e'))), ['192.168.5.11/24']); // after .10, not .10 again
  }),
);

test(
  'specific IPs: taken, outside, gateway, several sources (reference cases 16-19)',
  withNet(async (n) => {
    const c = n.conf({ ranges: [[{ subnet: '192.168.6.0/24', rangeStart: '192.168.6.10', rangeEnd: '192.168.6.14' }]] });
    assert.deepEqual(addrs(await backend.add(n.req(c, 'a', 'eth0', 'IP=192.168.6.13'))), ['192.168.6.13/24']);
    assert.equal(n.read('last_reserved_ip.0'), '192.168.6.13'); // a request moves the round robin too
    await fails(
      backend.add(n.req(c, 'b', 'eth0', 'IP=192.168.6.13')),
      101,
      'failed to allocate for range 0: requested IP address 192.168.6.13 is not available in range set 192.168.6.10-192.168.6.14',
    );
    await fails(backend.add(n.req(c, 'b', 'eth0', 'IP=192.168.6.99')), 101, 'failed to allocate all requested IPs: 192.168.6.99');
    const g = n.conf({ ranges: [[{ subnet: '10.244.1.0/24' }]] });
    await fails(backend.add(n.req(g, 'b', 'eth0', 'IP=10.244.1.1')), 101, "failed to allocate for range 0: requested ip 10.244.1.1 is subnet's gateway");
    const viaArgs = n.conf(
      { ranges: [[{ subnet: '192.168.6.0/24', rangeStart: '192.168.6.10', rangeEnd: '192.168.6.14' }]] },
      { args: { cni: { ips: ['192.168.6.12'] } } },
    );
    assert.deepEqual(addrs(await backend.add(n.req(viaArgs, 'c'))), ['192.168.6.12/24']);
    // A specific request does not skip the duplicate check (host-local's does, giving the
    // attachment a second address): one attachment, one address per range set.
    await fails(
      backend.add(n.req(c, 'c', 'eth0', 'IP=192.168.6.11')),
      101,
      'failed to allocate for range 0: 192.168.6.12 has been allocated to c, duplicate allocation is not allowed',
    );
  }),
);

test(
  "dual stack, all or nothing: a failing later set undoes only this ADD's reservations",
  withNet(async (n) => {
    const c = n.conf({ ranges: [[{ subnet: '10.244.1.0/24' }], [{ subnet: 'fd00::/126' }]] });
    const r = await backend.add(n.req(c, 'a'));
    assert.deepEqual(addrs(r), ['10.244.1.2/24', 'fd00::2/126']);
    assert.deepEqual(addrs(await backend.add(n.req(c, 'b'))), ['10.244.1.3/24', 'fd00::3/126']);
    await fails(backend.add(n.req(c, 'x')), 100, 'failed to allocate for range 1: no IP addresses available in range set: fd00::1-fd00::3');
    assert.deepEqual(n.files(), ['10.244.1.2', '10.244.1.3', 'fd00::2', 'fd00::3', 'last_reserved_ip.0', 'last_reserved_ip.1', 'lock']);
    assert.equal(n.read('last_reserved_ip.0'), '10.244.1.4'); // the hint moves even when undone (host-local too)
    // A leftover request fails after allocating, and undoes.
    await backend.del(n.req(c, 'b'));
    await fails(backend.add(n.req(c, 'y', 'eth0', 'IP=10.9.9.9')), 101, 'failed to allocate all requested IPs: 10.9.9.9');
    assert.deepEqual(n.files(), ['10.244.1.2', 'fd00::2', 'last_reserved_ip.0', 'last_reserved_ip.1', 'lock']);
  }),
);

test(
  'legacy files: bare-id content matches any ifname; \\n-separated content never matches (cases 27, 28)',
  withNet(async (n) => {
    const c = n.conf({ ranges: [[{ subnet: '10.1.0.0/24' }]] });
    await backend.add(n.req(c, 'c1'));
    writeFileSync(join(n.dir, '10.1.0.50'), 'oldctr');
    writeFileSync(join(n.dir, '10.1.0.51'), 'lfctr\neth0');
    await backend.check(n.req(c, 'oldctr', 'eth7'));
    await fails(backend.add(n.req(c, 'oldctr', 'eth7')), 101, /10.1.0.50 has been allocated to oldctr/);
    await backend.del(n.req(c, 'oldctr', 'eth3'));
    await backend.del(n.req(c, 'lfctr', 'eth0'));
    assert.deepEqual(n.files(), ['10.1.0.2', '10.1.0.51', 'last_reserved_ip.0', 'lock']);
  }),
);

test(
  "DEL with two range sets also removes legacy files of the id, as host-local's per-set release does",
  withNet(async (n) => {
    const c = n.conf({ ranges: [[{ subnet: '10.1.0.0/24' }], [{ subnet: 'fd00::/64' }]] });
    await backend.add(n.req(c, 'c1'));
    writeFileSync(join(n.dir, '10.1.0.50'), 'c1');
    await backend.del(n.req(c, 'c1'));
    assert.deepEqual(n.files(), ['last_reserved_ip.0', 'last_reserved_ip.1', 'lock']);
  }),
);

test(
  'garbage in the store: junk last_reserved_ip ignored, odd files left alone',
  withNet(async (n) => {
    const c = n.conf({ ranges: [[{ subnet: '10.1.0.0/29' }]] });
    await backend.add(n.req(c, 'c1'));
    writeFileSync(join(n.dir, 'last_reserved_ip.0'), '\u0000junk');
    writeFileSync(join(n.dir, 'README'), 'c2\r\neth0');
    writeFileSync(join(n.dir, '10.1.0.3'), '');
    assert.deepEqual(addrs(await backend.add(n.req(c, 'c2'))), ['10.1.0.4/29']); // .2 held, .3 blocked by the empty file
    await backend.del(n.req(c, 'c2'));
    assert.deepEqual(n.files(), ['10.1.0.2', '10.1.0.3', 'last_reserved_ip.0', 'lock']); // README matched c2 (host-local too)
  }),
);

test(
  'resolvConf fills dns; a missing file is an I/O error naming it (case 25)',
  withNet(async (n) => {
    const rc = join(n.dir, '..', 'resolv.conf');
    writeFileSync(
      rc,
      '# c\n; c\nnameserver 10.0.0.53\nnameserver 10.0.0.54 extra\ndomain example.org\nsearch a.example b.example\noptions ndots:5 timeout:1\nbogus\n',
    );
    const c = n.conf({ ranges: [[{ subnet: '10.20.0.0/24', gateway: '10.20.0.254' }]], resolvConf: rc });
    const r = await backend.add(n.req(c, 'c1'));
    assert.deepEqual(r.ips, [{ address: '10.20.0.1/24', gateway: '10.20.0.254' }]);
    assert.deepEqual(r.dns, {
      nameservers: ['10.0.0.53', '10.0.0.54'],
      domain: 'example.org',
      search: ['a.example', 'b.example'],
      options: ['ndots:5', 'timeout:1'],
    });
    const missing = n.conf({ ranges: [[{ subnet: '10.20.0.0/24' }]], resolvConf: '/nonexistent/resolv.conf' });
    await fails(backend.add(n.req(missing, 'c2')), 5, 'open /nonexistent/resolv.conf: no such file or directory');
  }),
);

test(
  'GC removes address files of attachments not listed, keeps lock, last_reserved_ip and legacy owners',
  withNet(async (n) => {
    const c = n.conf({ ranges: [[{ subnet: '10.1.0.0/24' }]] });
    for (const id of ['a', 'b', 'c']) await backend.add(n.req(c, id));
    await backend.add(n.req(c, 'a', 'eth1'));
    writeFileSync(join(n.dir, '10.1.0.60'), 'legacy');
    writeFileSync(join(n.dir, '10.1.0.61'), '');
    writeFileSync(join(n.dir, 'notes'), 'whatever');
    await backend.gc(c, [
      { containerId: 'a', ifname: 'eth0' },
      { containerId: 'legacy', ifname: 'eth0' },
    ]);
    assert.deepEqual(n.files(), ['10.1.0.2', '10.1.0.60', 'last_reserved_ip.0', 'lock', 'notes']);
    await backend.gc(c, []);
    assert.deepEqual(n.files(), ['last_reserved_ip.0', 'lock', 'notes']);
  }),
);

test(
  'STATUS: code 50 once a range set is exhausted; never creates anything',
  withNet(async (n) => {
    const c = n.conf({ ranges: [[{ subnet: '10.9.0.0/30' }], [{ subnet: 'fd00::/64' }]] });
    await backend.status(c);
    assert.throws(() => n.files(), /ENOENT/);
    await backend.add(n.req(c, 'a'));
    await fails(backend.status(c), 50, 'range set 0: no IP addresses available in range set: 10.9.0.1-10.9.0.2');
    await backend.del(n.req(c, 'a'));
    await backend.status(c);
  }),
);

test(
  'CHECK compares prevResult addresses inside our ranges with the files',
  withNet(async (n) => {
    const c = n.conf({ ranges: [[{ subnet: '10.1.0.0/24' }]] });
    await backend.add(n.req(c, 'a'));
    const ok = n.conf({ ranges: [[{ subnet: '10.1.0.0/24' }]] }, { prevResult: { ips: [{ address: '10.1.0.2/24' }, { address: '192.0.2.1/24' }] } });
    await backend.check(n.req(ok, 'a'));
    const bad = n.conf({ ranges: [[{ subnet: '10.1.0.0/24' }]] }, { prevResult: { ips: [{ address: '10.1.0.9/24' }] } });
    await fails(backend.check(n.req(bad, 'a')), 102, 'prevResult address 10.1.0.9/24 is not held by container a interface eth0');
  }),
);
