import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentMetrics } from './agent-metrics.js';

async function served(m: AgentMetrics): Promise<{ requests: number; observations: number }> {
  const requests = (await m.registry.getSingleMetric('podipam_agent_requests_total')!.get()).values.reduce((n, v) => n + v.value, 0);
  const h = await m.registry.getSingleMetric('podipam_agent_request_duration_seconds')!.get();
  const observations = h.values
    .filter((v) => (v as { metricName?: string }).metricName === 'podipam_agent_request_duration_seconds_count')
    .reduce((n, v) => n + v.value, 0);
  return { requests, observations };
}

test("the warm-up's calls run the counting code but reach no exported series; the runtime's do", async () => {
  const m = new AgentMetrics(() => undefined);
  for (let i = 0; i < 5; i++) m.observe({ verb: 'ADD', result: 'ok', ms: 0.4 }, true);
  assert.deepEqual(await served(m), { requests: 0, observations: 0 });
  m.observe({ verb: 'ADD', result: 'ok', ms: 0.4 });
  m.observe({ verb: 'DEL', result: 'code 11', ms: 2 }, false);
  assert.deepEqual(await served(m), { requests: 2, observations: 2 });
  assert.match(await m.registry.metrics(), /podipam_agent_requests_total\{verb="DEL",result="code 11"\} 1/);
});
