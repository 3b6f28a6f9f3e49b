/**
 * Where one ADD's time goes, measured: one pair unmeasured, then `pairs` sequential ADD+DEL pairs through the shim with
 * PODIPAM_SHIM_TRACE=1 (the lean driver's `seq`) to an agent started with PODIPAM_TRACE=1, read
 * by callBreakdown (medians, p90, p99, the slowest 5 %'s extra per segment), then the floor's
 * ADD in the same number of pairs right after (tracing costs a little: both totals printed).
 * The agent is the caller's (a traced agent of its own: the trace lines go to its stderr).
 */
import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type RunningAgent, SHIM_BIN } from '../../test/helpers/agent.js';
import { callBreakdown } from './call-breakdown.js';
import { ms, q } from './cni-subject.js';
import type { LeanDrivers } from './lean-driver.js';

export interface TracedBreakdown {
  readonly drivers: LeanDrivers;
  /** An agent started with PODIPAM_TRACE=1. */
  readonly agent: RunningAgent;
  /** The network's name and ipam section (the shim reaches `agent`'s socket). */
  readonly name: string;
  readonly ipam: Readonly<Record<string, unknown>>;
  readonly pairs: number;
  /** The table's title line. */
  readonly title: string;
  /** Each printed line is pushed here too. */
  readonly rows: string[];
}

export async function tracedBreakdown(o: TracedBreakdown): Promise<void> {
  const { driver, floorBin, dir } = o.drivers;
  const pairs = String(o.pairs);
  const conf = join(dir, `${o.name}.json`);
  writeFileSync(conf, JSON.stringify({ cniVersion: '1.0.0', name: o.name, ipam: o.ipam }));
  const env = { PATH: process.env.PATH, PODIPAM_AGENT_SOCKET: o.agent.socket, PODIPAM_PLUGIN: '', PODIPAM_SHIM_TRACE: '1' };
  // One pair first, unmeasured (another container id): a cluster node's first ADD claims its block.
  const first = spawnSync(driver, ['seq', SHIM_BIN, conf, '1', String(o.pairs)], { env, encoding: 'utf8', maxBuffer: 1 << 26 });
  if (first.status !== 0) throw new Error(`cni-driver seq (traced ${o.name}, first pair): ${first.stderr}`);
  const logFrom = o.agent.log().length;
  // Not spawnSync: this process must keep reading the agent's stderr (its trace lines) meanwhile.
  const r = await new Promise<{ stdout: string; stderr: string }>((resolve, reject) => {
    const c = spawn(driver, ['seq', SHIM_BIN, conf, pairs], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    c.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    c.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    c.on('close', (code) => (code === 0 ? resolve({ stdout, stderr }) : reject(new Error(`cni-driver seq (traced ${o.name}): ${stderr}`))));
  });
  const traced = (): string => o.agent.log().slice(logFrom);
  for (let i = 0; i < 100 && (traced().match(/^podipam-trace .*"ADD"/gm)?.length ?? 0) < o.pairs; i++) await new Promise((w) => setTimeout(w, 20));
  const f = spawnSync(driver, ['seq', floorBin, conf, pairs], { env: { PATH: process.env.PATH }, encoding: 'utf8', maxBuffer: 1 << 26 });
  if (f.status !== 0) throw new Error(`cni-driver seq (floor): ${f.stderr}`);
  const floorAdd = q(
    f.stdout
      .trim()
      .split('\n')
      .map((l) => Number(l.split(' ')[0]) / 1000),
    0.5,
  );
  const line = (label: string, cells: readonly string[]): void => {
    const text = `${label.padEnd(44)} ${cells.map((c) => c.padStart(12)).join(' ')}`;
    console.log(`  ${text}`);
    o.rows.push(text);
  };
  console.log(o.title);
  o.rows.push(o.title);
  line('', ['median', 'p90', 'p99', 'tail extra']);
  for (const b of callBreakdown(r.stdout, r.stderr, traced())) line(b.label, [ms(b.ms), ms(b.p90), ms(b.p99), ms(b.tailExtra)]);
  line('floor ADD (same run)', [ms(floorAdd), '', '', '']);
}
