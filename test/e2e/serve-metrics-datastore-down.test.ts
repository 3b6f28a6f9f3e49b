/**
 * serve's /metrics while its datastore does not answer (a real etcd member paused with SIGSTOP:
 * connections open, no answers, the worst case): every scrape still answers 200 within a
 * Prometheus scrape timeout, with podipam_datastore_up 0 and the pools' last figures (an outage
 * neither resolves nor raises a pool alert), so the alert rules
 * tell "datastore unreachable" (PodipamDatastoreUnreachable) from "serve down"; once the member
 * resumes, podipam_datastore_up is 1 and the pools are back.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startEtcd } from '../helpers/etcd.js';
import { runCliSync } from '../helpers/plugin.js';
import { type ServeProcess, startServe, waitFor } from './serve-harness.js';

/** Prometheus' default scrape timeout. */
const SCRAPE_TIMEOUT_MS = 10_000;

async function scrape(url: string): Promise<{ ms: number; status: number; body: string }> {
  const t0 = performance.now();
  const res = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(SCRAPE_TIMEOUT_MS) });
  return { status: res.status, body: await res.text(), ms: performance.now() - t0 };
}

test(
  'serve /metrics with its etcd hung: 200 within the scrape timeout, podipam_datastore_up 0, the last pool figures; 1 again once it answers',
  { timeout: 120_000 },
  async () => {
    const etcd = await startEtcd({ members: 1 });
    let serve: ServeProcess | undefined;
    try {
      const pool = runCliSync(etcd.url, ['pool', 'create', 'p', '--cidr', '10.124.0.0/24']);
      assert.equal(pool.code, 0, pool.stderr);
      serve = await startServe({ args: ['--datastore', etcd.url, '--no-default-pools', '--no-controller', '--no-history'] });
      const s = serve;
      const up = await scrape(s.url);
      assert.equal(up.status, 200);
      assert.match(up.body, /^podipam_datastore_up 1$/m);
      assert.match(up.body, /^podipam_pool_capacity_addresses\{pool="p",family="4"\} \d+$/m);

      await etcd.members[0]!.pause();
      const down = await waitFor('podipam_datastore_up 0', 30_000, async () => {
        const r = await scrape(s.url);
        assert.equal(r.status, 200, r.body);
        assert.ok(r.ms < SCRAPE_TIMEOUT_MS, `scrape took ${r.ms} ms`);
        return /^podipam_datastore_up 0$/m.test(r.body) ? r : undefined;
      });
      assert.match(down.body, /^podipam_pool_capacity_addresses\{pool="p",family="4"\} \d+$/m, 'the last figures stay');
      // Every later scrape answers too, while the member stays hung.
      for (let i = 0; i < 3; i++) {
        const r = await scrape(s.url);
        assert.equal(r.status, 200);
        assert.match(r.body, /^podipam_datastore_up 0$/m);
      }

      etcd.members[0]!.resume();
      await waitFor('podipam_datastore_up 1 and the pool back', 30_000, async () => {
        const r = await scrape(s.url);
        return /^podipam_datastore_up 1$/m.test(r.body) && /^podipam_pool_capacity_addresses\{pool="p"/m.test(r.body) ? r : undefined;
      });
    } finally {
      etcd.members[0]?.resume();
      await serve?.stop();
      await etcd.stop();
    }
  },
);
