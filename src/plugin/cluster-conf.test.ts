import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import type { NetConf } from '../cni/types.js';
import { DEFAULT_CACHE_DIR, parseClusterConf } from './cluster-conf.js';

const conf = (ipam: Record<string, unknown>): NetConf => ({ cniVersion: '1.0.0', name: 'n', ipam, raw: { ipam } });

describe('parseClusterConf', () => {
  it('defaults nodeName to $NODENAME, then the lower-cased host name; cacheDir to /run/podipam/cluster', () => {
    const c = parseClusterConf(conf({ type: 'podipam', datastore: 'sqlite:/x.db' }), { NODENAME: 'from-env' });
    assert.deepEqual(c, { datastore: 'sqlite:/x.db', nodeName: 'from-env', pools: undefined, cacheDir: DEFAULT_CACHE_DIR, routes: [] });
    assert.equal(parseClusterConf(conf({ datastore: 'memory:' }), {}).nodeName, hostname().trim().toLowerCase());
    assert.equal(parseClusterConf(conf({ datastore: 'memory:', nodeName: 'x' }), { NODENAME: 'y' }).nodeName, 'x');
  });

  it('matches keys case-insensitively as Go does, and "" turns the cache off', () => {
    const c = parseClusterConf(conf({ Datastore: 'memory:', NODENAME: 'n', Pools: ['a', 'b'], cachedir: '' }), {});
    assert.deepEqual([c.datastore, c.nodeName, c.pools, c.cacheDir], ['memory:', 'n', ['a', 'b'], null]);
  });
});
