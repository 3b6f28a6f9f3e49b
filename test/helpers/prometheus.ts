/**
 * A real Prometheus (Debian's `prometheus`) for tests: started on a free loopback port with a
 * temp config, rules and storage, ready once /-/ready answers; its HTTP API queried as Grafana
 * and Alertmanager would. Stopped with SIGTERM (SIGKILL after 5 s); killed if the test process
 * exits first. A missing binary fails with the package that provides it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { dump } from 'js-yaml';
import { freePort } from './free-port.js';
import { requireExecutable } from './prereq.js';
import { makeTempDir } from './tmp.js';

export const PROMETHEUS_BIN = '/usr/bin/prometheus';

export interface ScrapeJob {
  readonly job: string;
  /** host:port */
  readonly target: string;
  readonly labels?: Readonly<Record<string, string>>;
}

/** One element of /api/v1/query's vector result. */
export interface Sample {
  readonly metric: Record<string, string>;
  readonly value: [number, string];
}

export interface PrometheusAlert {
  readonly labels: Record<string, string>;
  readonly annotations: Record<string, string>;
  readonly state: 'pending' | 'firing';
  readonly value: string;
}

export interface RunningPrometheus {
  readonly url: string;
  /** An instant query; throws with Prometheus' error for a bad one. */
  query(expr: string): Promise<Sample[]>;
  /** The alerts pending or firing now (/api/v1/alerts). */
  alerts(): Promise<PrometheusAlert[]>;
  /** The scrape targets' health (/api/v1/targets), by job. */
  targets(): Promise<{ job: string; health: string; lastError: string }[]>;
  log(): string;
  stop(): Promise<void>;
}

const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

async function getJson(url: string): Promise<unknown> {
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  const body = (await res.json()) as { status: string; data: unknown; error?: string };
  if (body.status !== 'success') throw new Error(`${url}: ${res.status} ${body.error ?? JSON.stringify(body)}`);
  return body.data;
}

/**
 * Starts Prometheus scraping `jobs` every `intervalS` seconds and evaluating `rules` (a rules
 * file's text) as often; resolves once it is ready (at most 30 s).
 */
export async function startPrometheus(o: {
  readonly jobs: readonly ScrapeJob[];
  readonly rules: string;
  readonly intervalS?: number;
}): Promise<RunningPrometheus> {
  requireExecutable(PROMETHEUS_BIN);
  const dir = makeTempDir('prometheus');
  const interval = `${o.intervalS ?? 1}s`;
  writeFileSync(join(dir.path, 'rules.yaml'), o.rules);
  const config = {
    global: { scrape_interval: interval, scrape_timeout: interval, evaluation_interval: interval },
    rule_files: [join(dir.path, 'rules.yaml')],
    scrape_configs: [...new Set(o.jobs.map((j) => j.job))].map((job) => ({
      job_name: job,
      static_configs: o.jobs.filter((j) => j.job === job).map((j) => ({ targets: [j.target], ...(j.labels ? { labels: j.labels } : {}) })),
    })),
  };
  writeFileSync(join(dir.path, 'prometheus.yml'), dump(config));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(
    PROMETHEUS_BIN,
    [
      `--config.file=${join(dir.path, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir.path, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  live.add(child);
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(-20_000)));
  const exited = new Promise<void>((resolve) => child.on('exit', () => (live.delete(child), resolve())));
  let gone = false;
  void exited.then(() => (gone = true));
  const stop = async (): Promise<void> => {
    if (!gone) child.kill('SIGTERM');
    const kill = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(kill);
    dir.remove();
  };
  for (let i = 0; ; i++) {
    if (gone) throw new Error(`prometheus exited before it was ready:\n${stderr}`);
    const ready = await fetch(`${url}/-/ready`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) break;
    if (i > 300) {
      await stop();
      throw new Error(`prometheus not ready on ${url} after 30 s:\n${stderr}`);
    }
    await sleep(100);
  }
  return {
    url,
    async query(expr) {
      const data = (await getJson(`${url}/api/v1/query?query=${encodeURIComponent(expr)}`)) as { resultType: string; result: Sample[] };
      if (data.resultType !== 'vector') throw new Error(`${expr}: a ${data.resultType}, not a vector`);
      return data.result;
    },
    async alerts() {
      return ((await getJson(`${url}/api/v1/alerts`)) as { alerts: PrometheusAlert[] }).alerts;
    },
    async targets() {
      const data = (await getJson(`${url}/api/v1/targets`)) as { activeTargets: { labels: { job: string }; health: string; lastError: string }[] };
      return data.activeTargets.map((t) => ({ job: t.labels.job, health: t.health, lastError: t.lastError }));
    },
    log: () => stderr,
    stop,
  };
}
