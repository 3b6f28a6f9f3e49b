import { test } from 'node:test';
import assert from 'node:assert/strict';
import { metricsReference } from './metrics-reference.js';

test('metricsReference: a table per process, own metrics sorted before the process ones, pipes escaped', () => {
  const md = metricsReference([
    {
      title: 'p',
      where: 'at /metrics',
      processPrefixes: ['x_process_'],
      metrics: [
        { name: 'x_b_total', type: 'counter', help: 'b | c', labelNames: ['kind', 'result'] },
        { name: 'x_a', type: 'gauge', help: 'a', labelNames: [] },
        { name: 'x_process_cpu', type: 'gauge', help: 'cpu', labelNames: [] },
      ],
    },
  ]);
  const lines = md.split('\n');
  const own = lines.indexOf('| `x_a` | gauge | – | a |');
  assert.ok(own > 0, md);
  assert.equal(lines[own + 1], '| `x_b_total` | counter | `kind`, `result` | b \\| c |');
  assert.ok(lines.indexOf('| `x_process_cpu` | gauge | – | cpu |') > own + 1);
  assert.match(md, /^## p\n\nat \/metrics\n/m);
  assert.match(md, /Node\.js process metrics \(prom-client's defaults, `x_process_`\):/);
});
