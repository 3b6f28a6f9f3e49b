/**
 * podipam's alert rules (deploy/monitoring/podipam-rules.yaml) on the real promtool: they check,
 * their unit tests (deploy/monitoring/podipam-rules.test.yaml: series in, alerts out) pass and
 * cover every alert both firing and silent, and fail on a changed threshold; every alert carries
 * severity, for, summary, description and a runbook that exists and names real CLI commands;
 * the PrometheusRule of components/monitoring is the script's output from the same source.
 */
/* eslint-disable @typescript-eslint/no-explicit-any -- the test reads rendered manifests of any shape */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { dump, load } from 'js-yaml';
import type { Command } from 'commander';
import { buildProgram } from '../../src/cli/index.js';
import { REPO_ROOT } from '../helpers/plugin.js';
import { renderKustomization } from '../helpers/kustomize.js';
import { requireExecutable } from '../helpers/prereq.js';
import { withTempDir } from '../helpers/tmp.js';

const PROMTOOL = '/usr/bin/promtool';
const MONITORING = join(REPO_ROOT, 'deploy', 'monitoring');
const RULES = join(MONITORING, 'podipam-rules.yaml');
const UNIT_TESTS = join(MONITORING, 'podipam-rules.test.yaml');
const PROMETHEUS_RULE = join(REPO_ROOT, 'deploy', 'components', 'monitoring', 'prometheus-rule.yaml');
const RUNBOOKS = join(REPO_ROOT, 'docs', 'runbooks');
const RUNBOOK_BASE = 'https://github.com/podipam/podipam/blob/main/docs/runbooks/';

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
interface Groups {
  groups: { name: string; rules: Rule[] }[];
}

const source = load(readFileSync(RULES, 'utf8')) as Groups;
const alerts = source.groups.flatMap((g) => g.rules).filter((r): r is Rule & { alert: string } => r.alert !== undefined);

function promtool(args: readonly string[]): { status: number | null; out: string } {
  requireExecutable(PROMTOOL);
  const r = spawnSync(PROMTOOL, args, { encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, out: r.stdout + r.stderr };
}
function script(args: readonly string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [join(REPO_ROOT, 'scripts', 'prometheus-rule.mjs'), ...args], { encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

test("promtool check rules: the plain rules file and the PrometheusRule's groups are valid", async () => {
  const plain = promtool(['check', 'rules', RULES]);
  assert.equal(plain.status, 0, plain.out);
  assert.match(plain.out, new RegExp(`SUCCESS: ${alerts.length + 2} rules found`));
  await withTempDir('rules', (dir) => {
    const spec = (load(readFileSync(PROMETHEUS_RULE, 'utf8')) as { spec: Groups }).spec;
    writeFileSync(join(dir, 'spec.yaml'), dump(spec));
    const r = promtool(['check', 'rules', join(dir, 'spec.yaml')]);
    assert.equal(r.status, 0, r.out);
  });
});

test('the PrometheusRule is generated from the plain rules file (node scripts/prometheus-rule.mjs --write)', () => {
  const r = script([]);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(
    readFileSync(PROMETHEUS_RULE, 'utf8'),
    r.stdout,
    'deploy/components/monitoring/prometheus-rule.yaml is stale: run node scripts/prometheus-rule.mjs --write',
  );
  const rule = load(r.stdout) as { apiVersion: string; kind: string; metadata: { namespace: string }; spec: Groups };
  assert.equal(`${rule.apiVersion}/${rule.kind}`, 'monitoring.coreos.com/v1/PrometheusRule');
  assert.deepEqual(rule.spec, source);
  // --runbook-base moves every link, in both forms; a base that is not a URL directory is refused.
  const mine = 'https://wiki.example.com/podipam/';
  for (const args of [
    ['--runbook-base', mine],
    ['--runbook-base', mine, '--plain'],
  ]) {
    const out = script(args);
    assert.equal(out.status, 0, out.stderr);
    const doc = load(out.stdout) as Groups & { spec?: Groups };
    const urls = (doc.spec ?? doc).groups.flatMap((g) => g.rules).flatMap((x) => (x.annotations?.runbook_url ? [x.annotations.runbook_url] : []));
    assert.deepEqual(
      urls,
      alerts.map((a) => `${mine}${a.alert}.md`),
    );
  }
  const bad = script(['--runbook-base', 'wiki/podipam']);
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /--runbook-base must be an http\(s\) URL ending in "\/": current value is "wiki\/podipam"/);
});

test("overlays/monitoring: deploy/ plus the PrometheusRule and the scrape jobs the rules expect; the agents' metrics on the node address", async () => {
  const base = renderKustomization(join(REPO_ROOT, 'deploy')).objects;
  const withRules = renderKustomization(join(REPO_ROOT, 'deploy', 'overlays', 'monitoring')).objects;
  const added = ['PrometheusRule', 'ServiceMonitor', 'PodMonitor'];
  const of = (kind: string): any => {
    const found = withRules.filter((o) => o.kind === kind);
    assert.equal(found.length, 1, kind);
    assert.equal(found[0]!.metadata.namespace, 'podipam-system', kind);
    return found[0];
  };
  assert.deepEqual(of('PrometheusRule').spec, source);
  const ds = withRules.find((o) => o.kind === 'DaemonSet' && o.metadata.name === 'podipam-agent') as any;
  assert.deepEqual(
    withRules.filter((o) => !added.includes(o.kind) && o !== ds),
    base.filter((o) => !(o.kind === 'DaemonSet' && o.metadata.name === 'podipam-agent')),
    'nothing else changes',
  );
  // The DaemonSet differs in the agent's metrics address only, and stays valid.
  const agent = ds.spec.template.spec.containers[0];
  assert.ok(agent.command.includes('--metrics-listen=$(POD_IP):7421'), agent.command.join(' '));
  assert.deepEqual(
    agent.env.find((e: any) => e.name === 'POD_IP'),
    { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
  );
  const baseDs = structuredClone(base.find((o) => o.kind === 'DaemonSet') as any);
  const restored = structuredClone(ds);
  const c = restored.spec.template.spec.containers[0];
  c.command = c.command.map((a: string) => a.replace('$(POD_IP)', '127.0.0.1'));
  c.env = c.env.filter((e: any) => e.name !== 'POD_IP');
  delete c.ports;
  assert.deepEqual(restored, baseDs);
  const { DaemonSet } = (await import('kubernetes-models/apps/v1/DaemonSet')) as any;
  assert.doesNotThrow(() => new DaemonSet(ds).validate());
  // The PodMonitor selects the agents' pods by a port they name; job podipam-agent, node labelled.
  const pm = of('PodMonitor');
  assert.deepEqual(pm.spec.selector.matchLabels, { 'app.kubernetes.io/name': ds.spec.template.metadata.labels['app.kubernetes.io/name'] });
  const pe = pm.spec.podMetricsEndpoints[0];
  assert.deepEqual(agent.ports, [{ name: pe.port, containerPort: 7421 }]);
  assert.ok(pe.relabelings.some((r: any) => r.targetLabel === 'job' && r.replacement === 'podipam-agent'));
  assert.ok(pe.relabelings.some((r: any) => r.targetLabel === 'node' && r.sourceLabels[0] === '__meta_kubernetes_pod_node_name'));
  // The ServiceMonitor selects the Service of serve by its labels and port, with the read token; job podipam-serve.
  const sm = of('ServiceMonitor');
  const svc = base.find((o) => o.kind === 'Service' && o.metadata.name === 'podipam') as any;
  for (const [k, v] of Object.entries(sm.spec.selector.matchLabels)) assert.equal(svc.metadata.labels[k], v, k);
  const se = sm.spec.endpoints[0];
  assert.ok(svc.spec.ports.some((p: any) => p.name === se.port));
  assert.deepEqual(se.authorization.credentials, { name: 'podipam-tokens', key: 'read' });
  assert.ok(se.relabelings.some((r: any) => r.targetLabel === 'job' && r.replacement === 'podipam-serve'));
  // Every job the rules name is one the monitors make.
  const jobs = new Set(
    JSON.stringify(source)
      .match(/job=\\"[a-z-]+\\"/g)!
      .map((m) => m.replace(/^job=\\"|\\"$/g, '')),
  );
  assert.deepEqual([...jobs].sort(), ['podipam-agent', 'podipam-serve']);
  const comp = load(readFileSync(join(REPO_ROOT, 'deploy', 'components', 'monitoring', 'kustomization.yaml'), 'utf8')) as { kind: string };
  assert.equal(comp.kind, 'Component');
});

/** The CLI command a `podipam …` line names, and its flags that the CLI does not define. */
function unknownCli(line: string): string | undefined {
  const words = line.split(/\s+/);
  let cmd: Command = buildProgram();
  const program = cmd;
  let i = 1;
  while (i < words.length && cmd.commands.length > 0) {
    const next = cmd.commands.find((c) => c.name() === words[i]);
    if (!next) return `no command "${words.slice(0, i + 1).join(' ')}"`;
    cmd = next;
    i++;
  }
  const known = new Set([...cmd.options, ...program.options].flatMap((o) => [o.long, o.short]).filter(Boolean));
  const bad = words
    .slice(i)
    .filter((w) => /^--?[a-z]/.test(w))
    .map((w) => w.split('=')[0]!)
    .filter((f) => !known.has(f));
  return bad.length > 0 ? `"${line}": podipam ${cmd.name()} has no ${bad.join(', ')}` : undefined;
}

test('every alert: severity, a for:, summary and description, a runbook in docs/runbooks/ naming real CLI commands', () => {
  assert.ok(alerts.length >= 14, `${alerts.length} alerts`);
  assert.equal(new Set(alerts.map((a) => a.alert)).size, alerts.length, 'alert names are unique');
  const problems: string[] = [];
  for (const a of alerts) {
    const at = a.alert;
    if (!['critical', 'warning', 'info'].includes(a.labels?.severity ?? '')) problems.push(`${at}: severity ${a.labels?.severity}`);
    if (a.for === undefined) problems.push(`${at}: no for:`);
    for (const k of ['summary', 'description']) if (!a.annotations?.[k]?.includes('{{')) problems.push(`${at}: ${k} names nothing from the series`);
    if (a.annotations?.runbook_url !== `${RUNBOOK_BASE}${at}.md`) problems.push(`${at}: runbook_url ${a.annotations?.runbook_url}`);
    const page = join(RUNBOOKS, `${at}.md`);
    if (!existsSync(page)) {
      problems.push(`${at}: no ${page}`);
      continue;
    }
    const text = readFileSync(page, 'utf8');
    for (const h of [`# ${at}`, '## What it means', '## How to confirm', '## What to do']) if (!text.includes(h)) problems.push(`${at}.md has no "${h}"`);
    const commands = [...text.matchAll(/(?:^|`)(podipam [a-z][^`#\n]*?)\s*(?:#.*)?(?:`|$)/gm)].map((m) => m[1]!.trim());
    if (commands.length === 0) problems.push(`${at}.md names no podipam command to confirm with`);
    for (const c of commands) {
      const bad = unknownCli(c);
      if (bad) problems.push(`${at}.md: ${bad}`);
    }
  }
  // Every runbook page belongs to an alert (and the index lists them all).
  const pages = readdirSync(RUNBOOKS)
    .filter((f) => f !== 'README.md')
    .map((f) => f.replace(/\.md$/, ''))
    .sort();
  assert.deepEqual(pages, alerts.map((a) => a.alert).sort());
  const index = readFileSync(join(RUNBOOKS, 'README.md'), 'utf8');
  for (const a of alerts) if (!index.includes(`](${a.alert}.md)`)) problems.push(`docs/runbooks/README.md does not link ${a.alert}`);
  assert.deepEqual(problems, []);
  // The CLI check is real: an unknown command or flag is named.
  assert.match(unknownCli('podipam pool grow p') ?? '', /no command "podipam pool grow"/);
  assert.match(unknownCli('podipam ipam check --fix') ?? '', /has no --fix/);
});

interface UnitTests {
  tests: { alert_rule_test?: { alertname: string; exp_alerts: unknown[] }[] }[];
}

test('promtool test rules: every alert fires when it should and stays silent when it should not', async () => {
  const units = load(readFileSync(UNIT_TESTS, 'utf8')) as UnitTests;
  const cases = units.tests.flatMap((t) => t.alert_rule_test ?? []);
  const missing = alerts.flatMap((a) => [
    ...(cases.some((c) => c.alertname === a.alert && c.exp_alerts.length > 0) ? [] : [`${a.alert} never fires`]),
    ...(cases.some((c) => c.alertname === a.alert && c.exp_alerts.length === 0) ? [] : [`${a.alert} is never silent`]),
  ]);
  assert.deepEqual(missing, [], 'each alert has a firing and a silent case');
  const r = promtool(['test', 'rules', UNIT_TESTS]);
  assert.equal(r.status, 0, r.out);
  assert.match(r.out, /SUCCESS/);
  // The unit tests can fail: the same tests against rules whose nearly-full threshold moved.
  await withTempDir('rules', (dir) => {
    const changed = readFileSync(RULES, 'utf8').replace('podipam:pool_usage:ratio > 0.85', 'podipam:pool_usage:ratio > 0.95');
    assert.notEqual(changed, readFileSync(RULES, 'utf8'));
    writeFileSync(join(dir, 'podipam-rules.yaml'), changed);
    copyFileSync(UNIT_TESTS, join(dir, 'podipam-rules.test.yaml'));
    const bad = promtool(['test', 'rules', join(dir, 'podipam-rules.test.yaml')]);
    assert.equal(bad.status, 1, bad.out);
    assert.match(bad.out, /alertname: PodipamPoolNearlyFull, time: 30m/);
  });
});
