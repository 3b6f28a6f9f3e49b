import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import type { NetConf } from '../cni/types.js';
import { CniError } from '../cni/errors.js';
import { DEFAULT_CACHE_DIR, DEFAULT_STICKY_FOR_MS, parseClusterConf } from './cluster-conf.js';

const conf = (ipam: Record<string, unknown>): NetConf => ({ cniVersion: '1.0.0', name: 'n', ipam, raw: { ipam } });

describe('parseClusterConf', () => {
  it('defaults nodeName to $NODENAME, then the lower-cased host name; cacheDir to /run/podipam/cluster', () => {
    const c = parseClusterConf(conf({ type: 'podipam', datastore: 'sqlite:/x.db' }), { NODENAME: 'from-env' });
    assert.deepEqual(c, {
      datastore: 'sqlite:/x.db',
      nodeName: 'from-env',
      pools: undefined,
      cacheDir: DEFAULT_CACHE_DIR,
      routes: [],
      stickyForMs: DEFAULT_STICKY_FOR_MS,
    });
    assert.equal(parseClusterConf(conf({ datastore: 'memory:' }), {}).nodeName, hostname().trim().toLowerCase());
    assert.equal(parseClusterConf(conf({ datastore: 'memory:', nodeName: 'x' }), { NODENAME: 'y' }).nodeName, 'x');
  });

  it('matches keys case-insensitively as Go does, and "" turns the cache off', () => {
    const c = parseClusterConf(conf({ Datastore: 'memory:', NODENAME: 'n', Pools: ['a', 'b'], cachedir: '' }), {});
    assert.deepEqual([c.datastore, c.nodeName, c.pools, c.cacheDir], ['memory:', 'n', ['a', 'b'], null]);
  });

  it('reads stickyFor as a duration ("0" = off, default 10m) and refuses anything else with code 7 naming key and value', () => {
    const ms = (v: unknown): number => parseClusterConf(conf({ datastore: 'memory:', nodeName: 'n', stickyFor: v }), {}).stickyForMs;
    assert.equal(DEFAULT_STICKY_FOR_MS, 600_000);
    assert.deepEqual([ms('10m'), ms('90s'), ms('1h'), ms('500ms'), ms('0'), ms('1.5s')], [600_000, 90_000, 3_600_000, 500, 0, 1500]);
    assert.equal(parseClusterConf(conf({ datastore: 'memory:', nodeName: 'n', StickyFor: '1s' }), {}).stickyForMs, 1000);
    for (const v of ['10', 'ten minutes', '-1s', '', 10, true, '1000h']) {
      assert.throws(
        () => ms(v),
        (e: unknown) => e instanceof CniError && e.code === 7 && e.message.startsWith(`ipam.stickyFor ${JSON.stringify(v)}: `),
        `stickyFor ${JSON.stringify(v)}`,
      );
    }
  });

  it('refuses a bad datastore URL on every call, however many good ones were parsed before (only accepted URLs are remembered)', () => {
    const bad = 'etcd://[::1:2379';
    for (let i = 0; i < 3; i++) {
      for (let k = 0; k < 70; k++) assert.equal(parseClusterConf(conf({ datastore: `etcd://h${k}:2379`, nodeName: 'n' }), {}).datastore, `etcd://h${k}:2379`);
      assert.throws(
        () => parseClusterConf(conf({ datastore: bad, nodeName: 'n' }), {}),
        (e: unknown) => e instanceof CniError && e.code === 7 && e.message.startsWith(`ipam.datastore ${JSON.stringify(bad)}: `),
      );
    }
  });
});
