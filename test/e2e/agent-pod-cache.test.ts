/**
 * The agent's pod cache end to end: `podipam agent --kubeconfig` in CLUSTER mode against the
 * Kubernetes API double. A pod's placement comes from the API server's annotations (its
 * namespace's, its own) although the runtime passed none, through the shim; an annotation
 * changed in the API reaches the next ADD by the watch; a bad one fails the ADD with code 7
 * naming it; and the ADDs cost no API round trip (no pod GET, no list, no watch beyond the
 * cache's own).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { type RunningAgent, SHIM_BIN, requireShim, startAgent } from '../helpers/agent.js';
import { type FakeKubeApiServer, startFakeKubeApiServer } from '../helpers/fake-kube-apiserver.js';
import { type PluginCall, runCliSync, runPlugin } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';
import { freePort } from '../helpers/free-port.js';

const dir = makeTempDir('agent-pod-cache');
const NODE = 'pc-node';
after(() => dir.remove());

describe('agent --kubeconfig in cluster mode: placement from the watch-fed cache', () => {
  let fake: FakeKubeApiServer;
  let agent: RunningAgent;
  const url = `sqlite:${join(dir.path, 'store.db')}`;
  const sock = join(dir.path, 'run', 'agent.sock');
  let metricsPort = 0;

  before(async () => {
    requireShim();
    for (const [name, cidr] of [
      ['plain', '10.230.0.0/16'],
      ['gold', '10.231.0.0/16'],
    ] as const) {
      const r = runCliSync(url, ['pool', 'create', name, '--cidr', cidr]);
      assert.equal(r.code, 0, r.stderr);
    }
    fake = await startFakeKubeApiServer();
    fake.writeKubeconfig(join(dir.path, 'kubeconfig'));
    fake.addNamespace('team-gold', { 'podipam.io/pools': 'gold' });
    fake.addNamespace('team-plain');
    fake.addPod('team-gold', 'web-1', { node: NODE, ownerKind: 'ReplicaSet' });
    fake.addPod('team-gold', 'own-pools', { node: NODE, annotations: { 'podipam.io/pools': 'plain' } });
    fake.addPod('team-plain', 'db-0', { node: NODE, ownerKind: 'StatefulSet' });
    metricsPort = await freePort();
    agent = await startAgent(sock, [
      '--node',
      NODE,
      '--datastore',
      url,
      '--kubeconfig',
      join(dir.path, 'kubeconfig'),
      '--metrics-listen',
      `127.0.0.1:${metricsPort}`,
    ]);
    for (let i = 0; !(await agent.status()).podCache?.synced; i++) {
      if (i > 200) throw new Error(`pod cache not synced after 10 s: ${JSON.stringify((await agent.status()).podCache)}\n${agent.log()}`);
      await sleep(50);
    }
    for (let i = 0; fake.openWatches() < 2; i++) {
      if (i > 200) throw new Error('the agent did not open its two watches in 10 s');
      await sleep(50);
    }
  });
  after(async () => {
    await agent?.stop();
    await fake?.close();
  });

  const call = (ns: string, pod: string, id: string): PluginCall => ({
    command: 'ADD',
    containerId: id,
    ifname: 'eth0',
    args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${ns};K8S_POD_NAME=${pod};K8S_POD_INFRA_CONTAINER_ID=${id}`,
    config: { cniVersion: '1.0.0', name: 'pcnet', ipam: { type: 'podipam', datastore: url, nodeName: NODE, pools: ['plain'] } },
    env: { PODIPAM_AGENT_SOCKET: sock, PODIPAM_PLUGIN: '' },
  });
  const addressOf = async (ns: string, pod: string, id: string): Promise<string> => {
    const r = await runPlugin(SHIM_BIN, call(ns, pod, id));
    assert.equal(r.code, 0, `${ns}/${pod}: ${r.stdout}\n${agent.log()}`);
    return (JSON.parse(r.stdout) as { ips: { address: string }[] }).ips[0]!.address;
  };

  it("the namespace annotation picks the pool, the pod's own wins; no pod GET, no list on ADD", async () => {
    const before = { pods: { ...fake.podRequests }, ns: { ...fake.namespaceRequests } };
    const s0 = await agent.status();
    assert.deepEqual({ pods: s0.podCache?.pods, namespaces: s0.podCache?.namespaces }, { pods: 3, namespaces: 2 });
    assert.match(await addressOf('team-gold', 'web-1', 'c1'), /^10\.231\./, 'namespace team-gold: podipam.io/pools=gold');
    assert.match(await addressOf('team-plain', 'db-0', 'c2'), /^10\.230\./, 'no annotation: the configured pool');
    assert.match(await addressOf('team-gold', 'own-pools', 'c3'), /^10\.230\./, "the pod's own annotation wins over its namespace's");
    // A pod the cache does not hold (created just now, or not yet seen) still gets its namespace's placement.
    assert.match(await addressOf('team-gold', 'not-in-cache', 'c4'), /^10\.231\./);
    assert.deepEqual({ pods: fake.podRequests, ns: fake.namespaceRequests }, before, 'ADDs made no API request');
    assert.equal(fake.podRequests.get, 0, 'the per-ADD pod GET is gone');
  });

  it('an annotation changed in the API reaches the next ADD through the watch', async () => {
    const events = (await agent.status()).podCache!.events;
    fake.annotateNamespace('team-plain', { 'podipam.io/pools': 'gold' });
    for (let i = 0; (await agent.status()).podCache!.events <= events; i++) {
      if (i > 100) throw new Error('the namespace event did not reach the agent in 5 s');
      await sleep(50);
    }
    assert.match(await addressOf('team-plain', 'db-0', 'c5'), /^10\.231\./);
  });

  it('a malformed annotation from the API fails the ADD with code 7 naming it, the pod and the value', async () => {
    fake.addPod('team-plain', 'bad-ip', { node: NODE, annotations: { 'podipam.io/ip': 'not-an-address' } });
    for (let i = 0; (await agent.status()).podCache!.pods < 4; i++) {
      if (i > 100) throw new Error('the pod did not reach the agent in 5 s');
      await sleep(50);
    }
    const r = await runPlugin(SHIM_BIN, call('team-plain', 'bad-ip', 'c6'));
    const e = JSON.parse(r.stdout) as { code: number; msg: string };
    assert.equal(e.code, 7, r.stdout);
    assert.match(e.msg, /podipam\.io\/ip/);
    assert.match(e.msg, /not-an-address/);
    assert.match(e.msg, /team-plain\/bad-ip/);
  });

  it('the API server gone: ADDs go on from what the cache holds', async () => {
    await fake.down();
    try {
      assert.match(await addressOf('team-gold', 'web-1', 'c7'), /^10\.231\./);
    } finally {
      await fake.up();
    }
  });

  it('the metrics show the cache', async () => {
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const value = (name: string): number => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
    assert.equal(value('podipam_agent_pod_cache_synced'), 1);
    assert.equal(value('podipam_agent_pod_cache_pods'), 4);
    assert.equal(value('podipam_agent_pod_cache_namespaces'), 2);
    assert.ok(value('podipam_agent_pod_cache_events_total') >= 2, text);
    for (const n of ['podipam_agent_pod_cache_relists_total', 'podipam_agent_pod_cache_watch_resumes_total', 'podipam_agent_pod_cache_errors_total'])
      assert.ok(Number.isFinite(value(n)), n);
  });

  it('agent status shows the cache', async () => {
    const { spawnSync } = await import('node:child_process');
    const { PODIPAM_BIN } = await import('../helpers/plugin.js');
    const r = spawnSync(PODIPAM_BIN, ['agent', 'status', '--socket', sock], { encoding: 'utf8', timeout: 20_000 });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^pod cache: 4 pods, 2 namespaces, \d+ events, \d+ watch resumes, \d+ relists, \d+ errors/m);
  });
});

describe('agent --kubeconfig whose API server is down at the start', () => {
  it('a pod is not placed by guess before the cache has listed namespaces: code 11; placed once it has', async () => {
    requireShim();
    const url = `sqlite:${join(dir.path, 'down.db')}`;
    const sock = join(dir.path, 'run', 'agent-down.sock');
    for (const [name, cidr] of [
      ['plain', '10.232.0.0/16'],
      ['gold', '10.233.0.0/16'],
    ] as const) {
      const r = runCliSync(url, ['pool', 'create', name, '--cidr', cidr]);
      assert.equal(r.code, 0, r.stderr);
    }
    const fake = await startFakeKubeApiServer();
    let agent: RunningAgent | undefined;
    try {
      fake.writeKubeconfig(join(dir.path, 'kubeconfig-down'));
      fake.addNamespace('team-gold', { 'podipam.io/pools': 'gold' });
      await fake.down();
      agent = await startAgent(sock, ['--node', NODE, '--datastore', url, '--kubeconfig', join(dir.path, 'kubeconfig-down')]);
      const add = (id: string) =>
        runPlugin(SHIM_BIN, {
          command: 'ADD',
          containerId: id,
          ifname: 'eth0',
          args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=team-gold;K8S_POD_NAME=${id};K8S_POD_UID=uid-${id}`,
          config: { cniVersion: '1.0.0', name: 'downnet', ipam: { type: 'podipam', datastore: url, nodeName: NODE, pools: ['plain'] } },
          env: { PODIPAM_AGENT_SOCKET: sock, PODIPAM_PLUGIN: '' },
        });
      const early = await add('early');
      assert.notEqual(early.code, 0, `an ADD before the cache listed must not be placed from the defaults: ${early.stdout}`);
      const e = JSON.parse(early.stdout) as { code: number; msg: string };
      assert.equal(e.code, 11, early.stdout);
      assert.match(e.msg, /pod cache has not listed namespaces.*"team-gold"/);
      await fake.up();
      for (let i = 0; !(await agent.status()).podCache?.synced; i++) {
        if (i > 400) throw new Error(`pod cache not synced 20 s after the API server came back: ${JSON.stringify((await agent.status()).podCache)}`);
        await sleep(50);
      }
      const late = await add('late');
      assert.equal(late.code, 0, late.stdout);
      assert.match(
        (JSON.parse(late.stdout) as { ips: { address: string }[] }).ips[0]!.address,
        /^10\.233\./,
        'once listed, the namespace annotation places the pod',
      );
    } finally {
      await agent?.stop();
      await fake.close();
    }
  });
});

describe('agent --kubeconfig / --in-cluster flags', () => {
  it('a missing kubeconfig file, or both flags, is a usage error naming them', async () => {
    const { spawnSync } = await import('node:child_process');
    const { PODIPAM_BIN } = await import('../helpers/plugin.js');
    const run = (...args: string[]) =>
      spawnSync(PODIPAM_BIN, ['agent', '--socket', join(dir.path, 'flags', 'a.sock'), '--metrics-listen', 'off', ...args], {
        encoding: 'utf8',
        timeout: 20_000,
      });
    const missing = run('--kubeconfig', '/nonexistent/kubeconfig');
    assert.equal(missing.status, 2, missing.stderr);
    assert.match(missing.stderr, /invalid --kubeconfig "\/nonexistent\/kubeconfig": no such file/);
    const both = run('--kubeconfig', join(dir.path, 'kubeconfig'), '--in-cluster');
    assert.equal(both.status, 2, both.stderr);
    assert.match(both.stderr, /give --kubeconfig or --in-cluster, not both/);
  });

  it('--in-cluster (flag or config file key) outside a pod stops the agent at start, saying what is missing', async () => {
    const { spawnSync } = await import('node:child_process');
    const { writeFileSync, mkdirSync } = await import('node:fs');
    const { PODIPAM_BIN } = await import('../helpers/plugin.js');
    const env = { ...process.env };
    delete env.KUBERNETES_SERVICE_HOST;
    delete env.KUBERNETES_SERVICE_PORT;
    const conf = join(dir.path, 'in-cluster.json');
    writeFileSync(conf, JSON.stringify({ inCluster: true, datastore: `sqlite:${join(dir.path, 'incl.db')}` }));
    mkdirSync(join(dir.path, 'incl'), { recursive: true, mode: 0o700 });
    for (const extra of [
      ['--in-cluster', '--datastore', `sqlite:${join(dir.path, 'incl.db')}`],
      ['--config', conf],
    ]) {
      const r = spawnSync(
        PODIPAM_BIN,
        [
          'agent',
          '--socket',
          join(dir.path, 'incl', 'a.sock'),
          '--data-dir',
          join(dir.path, 'incl', 'dd'),
          '--node',
          'n1',
          '--metrics-listen',
          'off',
          ...extra,
        ],
        { encoding: 'utf8', timeout: 20_000, env },
      );
      assert.equal(r.status, 1, `${extra.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /in-cluster service account: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set/);
    }
  });
});
