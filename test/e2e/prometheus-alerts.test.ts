/**
 * podipam under a real Prometheus (Debian's): it scrapes a running `podipam serve` and two
 * agents (one with a warm pool, one in cluster mode) every second and evaluates the shipped
 * rules of deploy/monitoring/podipam-rules.yaml — in a copy whose only change is every alert's
 * `for:` shortened to 2 s (checked here), so a test of a minute sees what 15 minutes would show.
 * Pods are ADDed through the shim into pool "steady" at a steady 2 a second for 35 s, then at
 * once, until it crosses 85 %: PodipamPoolNearlyFull is silent before and firing after, as Prometheus'
 * /api/v1/alerts says. Then every query of the Grafana board (deploy/monitoring/
 * podipam-dashboard.json, variables substituted) runs against that Prometheus and returns data.
 * At the end of the steady phase, podipam's own forecast from its allocation history
 * (GET /api/v1/pools/steady/forecast?window=30s) and Prometheus' predict_linear over the same last
 * 30 s (30 scrapes) agree within 10 % on the time until the pool is full.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { dump, load } from 'js-yaml';
import { type RunningAgent, SHIM_BIN, requireShim, startAgent } from '../helpers/agent.js';
import { freePort } from '../helpers/free-port.js';
import { type PluginCall, REPO_ROOT, runCliSync, runPlugin } from '../helpers/plugin.js';
import { type RunningPrometheus, type PrometheusAlert, PROMETHEUS_BIN, startPrometheus } from '../helpers/prometheus.js';
import { requireExecutable } from '../helpers/prereq.js';
import { makeTempDir } from '../helpers/tmp.js';
import { type ServeProcess, api, startServe, waitFor } from './serve-harness.js';

const RULES = join(REPO_ROOT, 'deploy', 'monitoring', 'podipam-rules.yaml');
const DASHBOARD = join(REPO_ROOT, 'deploy', 'monitoring', 'podipam-dashboard.json');
/** Pool "steady": a /25 cut into /28 blocks of 13 usable addresses each. */
const STEADY = { cidr: '10.79.0.0/25', blockSize: 28, capacity: 8 * 13 };
const THRESHOLD = 0.85;
/** Steady phase: one ADD every 500 ms for 35 s (pods 2/s; the trend's window is its last 30 s). */
const STEADY_MS = 35_000;
const WINDOW = '30s';
const PACE_MS = 500;

interface Rule {
  alert?: string;
  for?: string;
  [k: string]: unknown;
}
interface Groups {
  groups: { name: string; rules: Rule[] }[];
}

/** The shipped rules with every alert's `for:` set to `forShort`; nothing else differs (asserted). */
function rulesWithShortFor(forShort: string): string {
  const shipped = load(readFileSync(RULES, 'utf8')) as Groups;
  const copy = structuredClone(shipped);
  for (const g of copy.groups) for (const r of g.rules) if (r.alert !== undefined) r.for = forShort;
  const withoutFor = (d: Groups): Groups => ({ groups: d.groups.map((g) => ({ ...g, rules: g.rules.map(({ for: _for, ...rest }) => rest) })) });
  assert.deepEqual(withoutFor(copy), withoutFor(shipped), 'the test copy differs from the shipped rules in for: only');
  return dump(copy, { lineWidth: -1 });
}

/** Every panel target's expr and every variable's query of the board. */
function dashboardQueries(): { panel: string; expr: string }[] {
  const board = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
    panels: { title: string; type: string; targets?: { expr: string }[] }[];
    templating: { list: { name: string; type: string; query?: { query: string } }[] };
  };
  const out: { panel: string; expr: string }[] = [];
  for (const p of board.panels) for (const t of p.targets ?? []) out.push({ panel: p.title, expr: t.expr });
  for (const v of board.templating.list) if (v.type === 'query') out.push({ panel: `variable $${v.name}`, expr: v.query!.query });
  return out;
}

/** A board query as Grafana would send it: variables at "All", $__rate_interval a window of our 1 s scrapes; label_values(m, l) → m with l. */
function substitute(expr: string): string {
  const lv = /^label_values\((.+), (\w+)\)$/.exec(expr);
  if (lv) return `count by (${lv[2]}) (${lv[1]})`;
  return expr.replaceAll('$__rate_interval', '20s').replaceAll('$pool', '.*').replaceAll('$node', '.*');
}

function steadyCall(socket: string, datastore: string, command: string, id: string): PluginCall {
  return {
    command,
    containerId: id,
    ifname: 'eth0',
    config: { cniVersion: '1.0.0', name: 'steady-net', ipam: { type: 'podipam', datastore, nodeName: 'n2', pools: ['steady'] } },
    env: { PODIPAM_AGENT_SOCKET: socket, PODIPAM_PLUGIN: '' },
  };
}

const nearlyFull = (alerts: readonly PrometheusAlert[], pool: string): PrometheusAlert | undefined =>
  alerts.find((a) => a.labels.alertname === 'PodipamPoolNearlyFull' && a.labels.pool === pool);

test(
  'a real Prometheus on serve and two agents: PodipamPoolNearlyFull fires when pool "steady" crosses 85 %, not before; every query of the Grafana board returns data; podipam\'s forecast and predict_linear agree within 10 %',
  { timeout: 240_000 },
  async () => {
    requireShim();
    requireExecutable(PROMETHEUS_BIN);
    const dir = makeTempDir('prom-e2e');
    let serve: ServeProcess | undefined;
    const agents: RunningAgent[] = [];
    let prom: RunningPrometheus | undefined;
    try {
      serve = await startServe({ args: ['--no-default-pools', '--gc-interval', '2s'] });
      const ds = serve.datastore;
      for (const args of [
        ['pool', 'create', 'small', '--cidr', '10.78.0.0/26', '--block-size', '28'],
        ['pool', 'create', 'steady', '--cidr', STEADY.cidr, '--block-size', String(STEADY.blockSize)],
      ]) {
        const r = runCliSync(ds, args);
        assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
      }
      const [portA, portB] = [await freePort(), await freePort()];
      const warmSocket = join(dir.path, 'a.sock');
      const clusterSocket = join(dir.path, 'b.sock');
      agents.push(
        await startAgent(warmSocket, [
          '--node',
          'n1',
          '--datastore',
          ds,
          '--data-dir',
          join(dir.path, 'a'),
          '--pools',
          'small',
          '--min-idle',
          '2',
          '--max-idle',
          '4',
          '--capacity',
          '16',
          '--cooldown',
          '1s',
          '--headroom-interval',
          '1s',
          '--metrics-listen',
          `127.0.0.1:${portA}`,
        ]),
      );
      agents.push(await startAgent(clusterSocket, ['--node', 'n2', '--datastore', ds, '--headroom-interval', '1s', '--metrics-listen', `127.0.0.1:${portB}`]));

      prom = await startPrometheus({
        rules: rulesWithShortFor('2s'),
        jobs: [
          { job: 'podipam-serve', target: new URL(serve.url).host },
          { job: 'podipam-agent', target: `127.0.0.1:${portA}`, labels: { node: 'n1' } },
          { job: 'podipam-agent', target: `127.0.0.1:${portB}`, labels: { node: 'n2' } },
        ],
      });
      const p = prom;
      await waitFor('every target scraped', 30_000, async () => {
        const t = await p.targets();
        return t.length === 3 && t.every((x) => x.health === 'up') ? t : undefined;
      }).catch((e: Error) => p.targets().then((t) => assert.fail(`${e.message}: ${JSON.stringify(t)}`)));
      const usage = await waitFor('podipam:pool_usage:ratio of pool steady', 20_000, async () => {
        const r = await p.query('podipam:pool_usage:ratio{pool="steady"}');
        return r.length === 1 ? r : undefined;
      });
      assert.equal(Number(usage[0]!.value[1]), 0);

      // A few pods into the warm pool of n1 (the board's warm-pool and latency panels have data).
      for (let i = 0; i < 3; i++) {
        const r = await runPlugin(SHIM_BIN, {
          command: 'ADD',
          containerId: `warm${i}`,
          ifname: 'eth0',
          config: { cniVersion: '1.0.0', name: 'warm-net', ipam: { type: 'podipam', agent: warmSocket } },
          env: { PODIPAM_PLUGIN: '' },
        });
        assert.equal(r.code, 0, r.stdout);
      }

      // Pool "steady" fills at 2 pods a second through the cluster-mode agent of n2.
      const started = Date.now();
      let pods = 0;
      const add = async (): Promise<void> => {
        const r = await runPlugin(SHIM_BIN, steadyCall(clusterSocket, ds, 'ADD', `steady${pods}`));
        assert.equal(r.code, 0, `ADD steady${pods}: ${r.stdout}\n${agents[1]!.log()}`);
        pods++;
      };
      while (Date.now() - started < STEADY_MS) {
        await add();
        const next = started + pods * PACE_MS;
        await sleep(Math.max(0, next - Date.now()));
      }
      // Two forecasts of the same 30 s of filling: podipam's from its history, Prometheus' from its scrapes.
      const [own, promTtf] = await Promise.all([
        api(serve.url, 'GET', `/api/v1/pools/steady/forecast?window=${WINDOW}`),
        p.query(
          `(podipam_pool_capacity_addresses{pool="steady"} - predict_linear(podipam_pool_allocated_addresses{pool="steady"}[${WINDOW}], 0)) / deriv(podipam_pool_allocated_addresses{pool="steady"}[${WINDOW}])`,
        ),
      ]);
      assert.equal(own.status, 200, JSON.stringify(own.body));
      const trend = (own.body as { trend: { state: string; secondsToFull: number | null; ratePerHour: number } }).trend;
      assert.equal(trend.state, 'filling', JSON.stringify(own.body));
      assert.equal(promTtf.length, 1, JSON.stringify(promTtf));
      const [ownS, promS] = [trend.secondsToFull!, Number(promTtf[0]!.value[1])];
      const diff = Math.abs(ownS - promS) / promS;
      console.log(
        `time to full of pool steady after ${pods} pods: podipam ${ownS.toFixed(1)} s (${trend.ratePerHour.toFixed(0)}/h), Prometheus predict_linear ${promS.toFixed(1)} s: ${(diff * 100).toFixed(1)} % apart`,
      );
      assert.ok(diff <= 0.1, `podipam's forecast ${ownS} s and Prometheus' ${promS} s differ by ${(diff * 100).toFixed(1)} %`);
      assert.ok(pods / STEADY.capacity < THRESHOLD - 0.1, `${pods} pods of ${STEADY.capacity} after the steady phase: below the threshold`);
      // Below the threshold, after 35 s of evaluations (the copy's for: is 2 s): silent.
      assert.equal(nearlyFull(await p.alerts(), 'steady'), undefined, 'not firing below 85 %');

      // Then at once across it.
      while (pods < Math.ceil(STEADY.capacity * THRESHOLD) + 2) await add();
      const fired = await waitFor('PodipamPoolNearlyFull firing for pool steady', 30_000, async () => {
        const a = nearlyFull(await p.alerts(), 'steady');
        return a?.state === 'firing' ? a : undefined;
      });
      assert.equal(fired.labels.severity, 'warning');
      assert.equal(fired.labels.job, 'podipam-serve');
      assert.match(fired.annotations.summary!, /^Pool steady is 8[5-9](\.\d+)?% allocated$/);
      assert.equal(fired.annotations.runbook_url, 'https://github.com/podipam/podipam/blob/main/docs/runbooks/PodipamPoolNearlyFull.md');
      assert.ok(Math.abs(Number(fired.value) - pods / STEADY.capacity) < 0.03, `alert value ${fired.value}, ${pods} of ${STEADY.capacity} allocated`);
      const all = await p.alerts();
      assert.equal(nearlyFull(all, 'small'), undefined, 'pool small (a warm pool of at most 16 of 52) stays silent');
      assert.ok(
        all.some((a) => a.labels.alertname === 'PodipamPoolFullSoon' && a.labels.pool === 'steady'),
        `a pool filling at 2 pods/s is "full soon": ${JSON.stringify(all.map((a) => a.labels))}`,
      );

      // Every query of the board returns data from this Prometheus.
      const empty: string[] = [];
      const queries = dashboardQueries();
      assert.ok(queries.length >= 20, `${queries.length} queries`);
      for (const q of queries) {
        const result = await p.query(substitute(q.expr));
        if (result.length === 0) empty.push(`${q.panel}: ${substitute(q.expr)}`);
      }
      assert.deepEqual(empty, [], 'board queries that returned no data');
    } finally {
      await prom?.stop();
      for (const a of agents) await a.stop();
      await serve?.stop();
      dir.remove();
    }
  },
);
