import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ServerMetrics } from './metrics.js';

const pool = { name: 'p', family: 4, capacity: 256n, allocated: 7, blocks: 1 };

test('ServerMetrics: a datastore that answers is podipam_datastore_up 1 with the pool series', async () => {
  const m = new ServerMetrics({ pools: async () => [pool], nodes: async () => 2, datastoreUp: async () => true });
  const { body } = await m.scrape();
  assert.match(body, /^podipam_datastore_up 1$/m);
  assert.match(body, /^podipam_pool_allocated_addresses\{pool="p",family="4"\} 7$/m);
  assert.match(body, /^podipam_pool_capacity_addresses\{pool="p",family="4"\} 256$/m);
  assert.match(body, /^podipam_nodes 2$/m);
});

test('ServerMetrics: a datastore that does not answer still scrapes: podipam_datastore_up 0, no pool figures', async () => {
  const down = async (): Promise<never> => {
    throw new Error('etcd: deadline exceeded');
  };
  const m = new ServerMetrics({ pools: down, nodes: down, datastoreUp: async () => false });
  const { body } = await m.scrape();
  assert.match(body, /^podipam_datastore_up 0$/m);
  assert.doesNotMatch(body, /^podipam_pool_allocated_addresses\{/m);
  assert.match(body, /^podipam_gc_runs_total\{result="ok"\} 0$/m, 'the rest is there');
});
