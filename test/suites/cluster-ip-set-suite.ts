/**
 * The cluster service's ip-sets (src/cluster/admin/ip-sets.ts and the planner's ipSet), run against
 * every store back end by src/cluster/service/cluster-ipam.test.ts and test/e2e/cluster-suites-etcd.test.ts.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { formatAddr, parseAddr } from '../../src/ip/index.js';
import type { Store } from '../../src/store/index.js';
import { AddressUnavailableError, NotFoundError, PoolExhaustedError } from '../../src/cluster/records/errors.js';
import { IpSetConflictError, IpSetExhaustedError, IpSetInUseError, PoolHasIpSetsError } from '../../src/cluster/records/ip-set-errors.js';
import { ipam, withStoreOf } from './cluster-suite-helpers.js';

const attrs = (i: number) => ({ network: 'net', containerId: `c${i}`, ifname: 'eth0', namespace: 'default', pod: `web-${i}` });

export function clusterIpSetSuite(kind: string, open: () => Promise<Store>): void {
  const withStore = withStoreOf(open);

  describe(`ClusterIpam on ${kind}: ip-sets`, () => {
    it(
      'a set of 5: five pods get its five addresses, a sixth gets code 100 naming it, other requests never get one, freed addresses return to the set',
      withStore(async (s) => {
        const c = ipam(s);
        await c.createPool({ name: 'small', cidr: '10.20.0.0/28', blockSize: 28 }); // 13 usable addresses
        await c.createPool({ name: 'v6', cidr: 'fd00:20::/120', blockSize: 124 });
        const set = await c.createIpSet('web', 'small', { count: 5 });
        assert.deepEqual([...set.addrs.addrs()].map(formatAddr), ['10.20.0.2', '10.20.0.3', '10.20.0.4', '10.20.0.5', '10.20.0.6']);
        const got: string[] = [];
        for (let i = 0; i < 5; i++) {
          const a = await c.assign({ node: 'n', handle: `h${i}`, attrs: attrs(i), auto: 'each-family', ipSet: 'web' });
          assert.deepEqual(
            a.map((x) => x.addr.family),
            [4, 6],
            'the set gives IPv4, the IPv6 pool the rest',
          );
          got.push(formatAddr(a[0]!.addr));
        }
        assert.deepEqual(got, ['10.20.0.2', '10.20.0.3', '10.20.0.4', '10.20.0.5', '10.20.0.6']);
        assert.deepEqual(
          (await c.assign({ node: 'n', handle: 'h3', auto: 'each-family', ipSet: 'web' })).map((x) => formatAddr(x.addr))[0],
          '10.20.0.5',
          'a repeated ADD returns what it holds',
        );
        await assert.rejects(
          c.assign({ node: 'n', handle: 'h5', auto: 'each-family', ipSet: 'web' }),
          (e: unknown) => e instanceof IpSetExhaustedError && e.ipSet === 'web' && e.failure === 'exhausted',
        );
        // The pool's other 8 addresses go to pods without the set; a 9th finds the pool exhausted.
        for (let i = 0; i < 8; i++) {
          const [a] = await autoOne(c, `plain${i}`);
          assert.ok(!set.addrs.contains(a!.addr), `${formatAddr(a!.addr)} is not from the set`);
        }
        await assert.rejects(autoOne(c, 'plain8'), PoolExhaustedError);
        await assert.rejects(
          c.assign({ node: 'n', handle: 'x', ips: [parseAddr('10.20.0.4')] }),
          (e: unknown) => e instanceof AddressUnavailableError && /belongs to ip-set "web"/.test(e.message),
        );
        // Free every set address: plain pods still do not get them; set members do.
        for (let i = 0; i < 5; i++) await c.releaseHandle(`h${i}`, 'n');
        await assert.rejects(autoOne(c, 'plain8'), PoolExhaustedError);
        await assert.rejects(autoOne(ipam(s), 'plain8'), PoolExhaustedError, 'a fresh instance (snapshot read anew) agrees');
        const again: string[] = [];
        for (let i = 0; i < 5; i++) again.push(formatAddr((await ipam(s).assign({ node: 'm', handle: `g${i}`, auto: 'each-family', ipSet: 'web' }))[0]!.addr));
        assert.deepEqual(again.sort(), got.sort());
        const shown = await c.showIpSet('web');
        assert.equal(shown.held, 5);
        assert.deepEqual(shown.addresses[0], { address: '10.20.0.2', handle: 'g0', node: 'm' });
        assert.deepEqual(await c.check(), { leaks: [], problems: [] });
      }),
    );

    it(
      'show names the pods; delete is refused while an address is held (naming the pod), then deletes',
      withStore(async (s) => {
        const c = ipam(s);
        await c.createPool({ name: 'p', cidr: '10.21.0.0/24', blockSize: 26 });
        await c.createIpSet('db', 'p', { ranges: ['10.21.0.10-10.21.0.11', '10.21.0.70'] });
        await c.assign({ node: 'n', handle: 'h1', attrs: attrs(1), auto: 'each-family', ipSet: 'db' });
        const shown = await c.showIpSet('db');
        assert.deepEqual(shown.addresses, [
          { address: '10.21.0.10', handle: 'h1', namespace: 'default', pod: 'web-1', node: 'n' },
          { address: '10.21.0.11' },
          { address: '10.21.0.70' },
        ]);
        assert.deepEqual(await c.listIpSets(), [{ name: 'db', pool: 'p', ranges: ['10.21.0.10-10.21.0.11', '10.21.0.70'], size: 3, held: 1 }]);
        await assert.rejects(
          c.deleteIpSet('db'),
          (e: unknown) => e instanceof IpSetInUseError && /10\.21\.0\.10 \(pod default\/web-1, handle "h1"\)/.test(e.message),
        );
        await c.releaseHandle('h1', 'n');
        await assert.rejects(
          c.deletePool('p'),
          (e: unknown) => e instanceof PoolHasIpSetsError && /Cannot delete pool "p": ip-set "db" draws from it/.test(e.message),
        );
        await c.deleteIpSet('db');
        assert.deepEqual(await c.listIpSets(), []);
        await assert.rejects(c.deleteIpSet('db'), NotFoundError);
        // Its addresses are the pool's again.
        assert.equal(formatAddr((await c.assign({ node: 'n', handle: 'h2', ips: [parseAddr('10.21.0.10')] }))[0]!.addr), '10.21.0.10');
      }),
    );

    it(
      'create refuses bad input, held, reserved, taken and unusable addresses, naming them; count skips them',
      withStore(async (s) => {
        const c = ipam(s);
        await c.createPool({ name: 'p', cidr: '10.22.0.0/24', blockSize: 28 });
        await c.putReservation('r', ['10.22.0.3']);
        await c.assign({ node: 'n', handle: 'h', attrs: attrs(7), ips: [parseAddr('10.22.0.4')] });
        await c.createIpSet('a', 'p', { ranges: ['10.22.0.5'] });
        const refused = async (name: string, spec: Parameters<typeof c.createIpSet>[2], check: (e: unknown) => boolean, pool = 'p') =>
          assert.rejects(c.createIpSet(name, pool, spec), check);
        await refused('B', { count: 1 }, (e) => e instanceof TypeError && /ip-set name "B"/.test(e.message));
        await refused('b', { count: 1 }, (e) => e instanceof NotFoundError && /pool "nope"/.test(e.message), 'nope');
        await refused('b', { count: 0 }, (e) => e instanceof RangeError && /ip-set count 0/.test(e.message));
        await refused('b', { ranges: ['10.23.0.1'] }, (e) => e instanceof RangeError && /"10\.23\.0\.1": not inside pool "p"/.test(e.message));
        await refused(
          'b',
          { ranges: ['10.22.0.1'] },
          (e) => e instanceof RangeError && /10\.22\.0\.1: it is the gateway of block 10\.22\.0\.0\/28/.test(e.message),
        );
        await refused('b', { ranges: ['10.22.0.3'] }, (e) => e instanceof IpSetConflictError && /reserved \(reservation "r"\)/.test(e.message));
        await refused(
          'b',
          { ranges: ['10.22.0.4'] },
          (e) => e instanceof IpSetConflictError && /10\.22\.0\.4 is held by pod default\/web-7 \(handle "h"\)/.test(e.message),
        );
        await refused('b', { ranges: ['10.22.0.5-10.22.0.6'] }, (e) => e instanceof IpSetConflictError && /belongs to ip-set "a"/.test(e.message));
        await refused('a', { ranges: ['10.22.0.6'] }, (e) => e instanceof IpSetConflictError && /exists/.test(e.message));
        await refused('b', { ranges: ['zz'] }, (e) => e instanceof TypeError && /invalid ip-set address "zz"/.test(e.message));
        // count: 2 = .2 (.0 network, .1 gateway, .3 reserved, .4 held, .5 in set "a") and .6.
        const b = await c.createIpSet('b', 'p', { count: 2 });
        assert.deepEqual([...b.addrs.addrs()].map(formatAddr), ['10.22.0.2', '10.22.0.6']);
        await refused('c', { count: 300 }, (e) => e instanceof RangeError || e instanceof IpSetConflictError);
      }),
    );

    it(
      'a set created after an instance cached its snapshot is honoured by that instance (the config generation moved)',
      withStore(async (s) => {
        const c1 = ipam(s);
        await c1.createPool({ name: 'p', cidr: '10.24.0.0/28', blockSize: 28 });
        const [first] = await autoOne(c1, 'a'); // caches the snapshot
        assert.equal(formatAddr(first!.addr), '10.24.0.2');
        const set = await ipam(s).createIpSet('late', 'p', { count: 3 });
        assert.deepEqual([...set.addrs.addrs()].map(formatAddr), ['10.24.0.3', '10.24.0.4', '10.24.0.5']);
        const [next] = await autoOne(c1, 'b');
        assert.equal(formatAddr(next!.addr), '10.24.0.6');
      }),
    );
  });
}

function autoOne(c: ReturnType<typeof ipam>, handle: string) {
  return c.assign({ node: 'n', handle, auto: { 4: 1 } });
}
