/**
 * docs/metrics.md against the real thing: the file is what the registries generate
 * (`npm run docs:metrics`), and what `/metrics` of a running `serve` (history on) and a running
 * `podipam agent` export is exactly what it lists per process — every family name, its type, and
 * for each family with samples the label names they carry (a histogram's `le` aside).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { metricsSections } from '../../src/cli/metrics-doc.js';
import { metricsReference, type MetricDescription } from '../../src/server/metrics-reference.js';
import { startAgent } from '../helpers/agent.js';
import { freePort } from '../helpers/free-port.js';
import { REPO_ROOT } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';
import { api, startServe } from './serve-harness.js';

interface Family {
  type: string;
  labels: Set<string>;
  samples: number;
}

/** The families of a Prometheus text exposition: TYPE lines, and the label names of their samples. */
function parseExposition(text: string): Map<string, Family> {
  const fams = new Map<string, Family>();
  for (const line of text.split('\n')) {
    const t = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (t) fams.set(t[1] as string, { type: t[2] as string, labels: new Set(), samples: 0 });
  }
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? \S+/.exec(line);
    assert.ok(m, `a sample line: ${line}`);
    const name = m[1] as string;
    const fam = fams.get(name) ?? fams.get(name.replace(/_(bucket|sum|count)$/, ''));
    assert.ok(fam, `sample ${name} belongs to a family with a TYPE line`);
    fam.samples++;
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"/g))
      if (!(fam.type === 'histogram' && l[1] === 'le')) fam.labels.add(l[1] as string);
  }
  return fams;
}

function compare(what: string, documented: readonly MetricDescription[], exported: Map<string, Family>): void {
  assert.deepEqual([...exported.keys()].sort(), documented.map((m) => m.name).sort(), `${what}: the families /metrics exports are the documented ones`);
  let withSamples = 0;
  for (const m of documented) {
    const f = exported.get(m.name) as Family;
    assert.equal(f.type, m.type, `${what} ${m.name}: type`);
    if (f.samples === 0 || (m.labelNames.length > 0 && f.labels.size === 0)) continue; // a labelled family with no child yet
    withSamples++;
    assert.deepEqual([...f.labels].sort(), [...m.labelNames].sort(), `${what} ${m.name}: label names`);
  }
  assert.ok(withSamples >= documented.length / 2, `${what}: ${withSamples} of ${documented.length} families had samples to check labels on`);
}

test('metrics reference: docs/metrics.md is generated, and serve and agent export exactly what it lists', { timeout: 90_000 }, async () => {
  const sections = metricsSections();
  assert.equal(readFileSync(join(REPO_ROOT, 'docs', 'metrics.md'), 'utf8'), metricsReference(sections), 'docs/metrics.md is stale: run npm run docs:metrics');
  const [serveDoc, agentDoc] = sections;
  assert.ok(serveDoc && agentDoc);

  const s = await startServe();
  const dir = makeTempDir('metrics-ref');
  try {
    // Give the labelled families children: an allocation through the API, requests timed.
    assert.equal((await api(s.url, 'POST', '/api/v1/allocations', { node: 'n1', containerId: 'm1', network: 'mr' })).status, 201);
    await api(s.url, 'GET', '/api/v1/overview');
    const r = await api(s.url, 'GET', '/metrics');
    assert.equal(r.status, 200);
    compare('serve', serveDoc.metrics, parseExposition(r.body as string));

    const port = await freePort();
    const agent = await startAgent(join(dir.path, 'agent.sock'), ['--metrics-listen', `127.0.0.1:${port}`]);
    try {
      const res = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(10_000) });
      assert.equal(res.status, 200);
      compare('agent', agentDoc.metrics, parseExposition(await res.text()));
    } finally {
      await agent.stop();
    }
  } finally {
    await s.stop();
    dir.remove();
  }
});
