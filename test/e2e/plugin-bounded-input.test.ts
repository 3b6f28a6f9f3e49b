/**
 * Input from pods is bounded and checked, through the built plugin (cluster mode, SQLite) and
 * through the agent that serves many pods on one thread: a podipam.io/pools value of 37,000
 * names (under Kubernetes' 256 KiB annotation limit) is refused with code 7 naming the
 * annotation at once, and does not hold up another pod's ADD on the same agent; a pod or
 * namespace name no Kubernetes object can have is code 7 naming the CNI_ARGS field, with its
 * control characters escaped, never raw, in the answer.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { PODIPAM_BIN, type PluginCall, runCliSync, runPlugin } from '../helpers/plugin.js';
import { type RunningAgent, SHIM_BIN, requireShim, startAgent } from '../helpers/agent.js';
import { makeTempDir } from '../helpers/tmp.js';

const HUGE = Array.from({ length: 37000 }, (_, i) => `p${i}`).join(',');

interface Answer {
  readonly code?: number;
  readonly msg?: string;
  readonly ips?: readonly { address: string }[];
}

function call(ipam: Record<string, unknown>, containerId: string, o: { annotations?: Record<string, string>; ns?: string; name?: string } = {}): PluginCall {
  return {
    command: 'ADD',
    containerId,
    ifname: 'eth0',
    args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${o.ns ?? 'shop'};K8S_POD_NAME=${o.name ?? containerId}`,
    config: { cniVersion: '1.0.0', name: 'bnet', ipam, ...(o.annotations ? { runtimeConfig: { 'io.kubernetes.cri.pod-annotations': o.annotations } } : {}) },
  };
}

test(
  'the built plugin: a 37,000-name podipam.io/pools is code 7 naming the annotation, at once; bad pod names are code 7 naming the field',
  { timeout: 120_000 },
  async () => {
    assert.ok(HUGE.length < 256 * 1024, `${HUGE.length} bytes: a value Kubernetes can store`);
    const dir = makeTempDir('bounded-input');
    try {
      const url = `sqlite:${join(dir.path, 'ds.db')}`;
      assert.equal(runCliSync(url, ['pool', 'create', 'default', '--cidr', '10.76.0.0/24']).code, 0);
      const ipam = { type: 'podipam', datastore: url, nodeName: 'n1', cacheDir: join(dir.path, 'cache') };
      const plain = await runPlugin(PODIPAM_BIN, call(ipam, 'warm-up'));
      assert.equal(plain.code, 0, plain.stdout);
      const r = await runPlugin(PODIPAM_BIN, call(ipam, 'huge', { annotations: { 'podipam.io/pools': HUGE } }));
      const a = JSON.parse(r.stdout) as Answer;
      assert.equal(a.code, 7, r.stdout.slice(0, 500));
      assert.match(a.msg!, /^annotation podipam\.io\/pools="p0,p1,.*on pod shop\/huge: value of 247889 bytes is longer than the 16384 bytes allowed$/);
      assert.ok(r.stdout.length < 1000, `the answer quotes only the start of the value (${r.stdout.length} bytes)`);
      // A plugin run costs its start-up (~plain.ms); the parse adds next to nothing.
      assert.ok(r.ms < plain.ms + 500, `refused in ${r.ms} ms (a plain ADD: ${plain.ms} ms)`);

      for (const [o, field] of [
        [{ name: 'web\u001b[2Jx\u0007' }, 'K8S_POD_NAME'],
        [{ name: 'Web-0' }, 'K8S_POD_NAME'],
        [{ ns: 'a.b' }, 'K8S_POD_NAMESPACE'],
        [{ ns: 'n'.repeat(64) }, 'K8S_POD_NAMESPACE'],
      ] as const) {
        const b = await runPlugin(PODIPAM_BIN, call(ipam, 'named', o));
        const e = JSON.parse(b.stdout) as Answer;
        assert.equal(e.code, 7, b.stdout);
        assert.ok(e.msg!.startsWith(`CNI_ARGS ${field}=`), e.msg);
        // eslint-disable-next-line no-control-regex
        assert.ok(!/[\u0000-\u001f\u007f-\u009f]/.test(e.msg!), `no raw control character: ${JSON.stringify(e.msg)}`);
      }
      const esc = JSON.parse((await runPlugin(PODIPAM_BIN, call(ipam, 'named', { name: 'web\u001b[2Jx\u0007' }))).stdout) as Answer;
      assert.ok(esc.msg!.includes('"web\\u001b[2Jx\\u0007"'), esc.msg);
    } finally {
      dir.remove();
    }
  },
);

test('the agent: a 37,000-name annotation does not hold up other pods’ ADDs', { timeout: 120_000 }, async () => {
  requireShim();
  const dir = makeTempDir('bounded-input-agent');
  let agent: RunningAgent | undefined;
  try {
    const url = `sqlite:${join(dir.path, 'ds.db')}`;
    assert.equal(runCliSync(url, ['pool', 'create', 'default', '--cidr', '10.77.0.0/16']).code, 0);
    const socket = join(dir.path, 'run', 'agent.sock');
    agent = await startAgent(socket, ['--node', 'bnode', '--datastore', url, '--data-dir', join(dir.path, 'agent')]);
    const ipam = { type: 'podipam', agent: socket, datastore: url, nodeName: 'bnode' };
    const run = (c: PluginCall) => runPlugin(SHIM_BIN, { ...c, env: { PODIPAM_PLUGIN: '' } });
    assert.equal((await run(call(ipam, 'first'))).code, 0);
    // Eight annotated ADDs at once with a plain one: the plain one is not held up behind them.
    const started = performance.now();
    const huge = Array.from({ length: 8 }, (_, i) => run(call(ipam, `huge-${i}`, { annotations: { 'podipam.io/pools': HUGE } })));
    const plain = await run(call(ipam, 'plain'));
    const plainMs = performance.now() - started;
    assert.equal(plain.code, 0, plain.stdout);
    for (const h of await Promise.all(huge)) {
      const a = JSON.parse(h.stdout) as Answer;
      assert.equal(a.code, 7, h.stdout.slice(0, 300));
      assert.match(a.msg!, /^annotation podipam\.io\/pools=/);
    }
    // Each quadratic parse took over a second on the agent's one thread.
    assert.ok(plainMs < 2000, `a plain ADD beside eight 37,000-name ones took ${plainMs.toFixed(0)} ms`);
  } finally {
    await agent?.stop();
    dir.remove();
  }
});
