/**
 * Kubernetes pods' CNI calls through the shim to a `podipam agent` warm pool, and a bounded
 * wait on the agent's status: shared by the sticky, pod GC and release-evidence e2e tests.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AgentStatus } from '../../src/agent/agent-stats.js';
import { type RunningAgent, SHIM_BIN } from './agent.js';
import type { FakeKubeApiServer } from './fake-kube-apiserver.js';
import { type PluginCall, runPlugin } from './plugin.js';

/** A pod's CNI call (eth0, CNI_ARGS naming the pod as the kubelet does) on `network` of the agent at `socket`. */
export function podCall(socket: string, network: string, command: string, containerId: string, namespace: string, name: string, uid: string): PluginCall {
  return {
    command,
    containerId,
    ifname: 'eth0',
    args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${namespace};K8S_POD_NAME=${name};K8S_POD_INFRA_CONTAINER_ID=${containerId};K8S_POD_UID=${uid}`,
    config: { cniVersion: '1.0.0', name: network, ipam: { type: 'podipam', agent: socket } },
    env: { PODIPAM_PLUGIN: '' },
  };
}

/** CNI ADD through the shim for the pod `fake` has under namespace/name (its uid); returns its IPv4 address. */
export async function addPod(fake: FakeKubeApiServer, socket: string, network: string, containerId: string, namespace: string, name: string): Promise<string> {
  const uid = fake.getPod(namespace, name)?.metadata.uid ?? `no-api-uid-${containerId}`;
  const r = await runPlugin(SHIM_BIN, podCall(socket, network, 'ADD', containerId, namespace, name, uid));
  assert.equal(r.code, 0, `ADD ${namespace}/${name} ${containerId}: ${r.stdout} ${r.stderr}`);
  return (JSON.parse(r.stdout) as { ips: { address: string }[] }).ips[0]!.address;
}

/** Polls the agent's status until `ok` holds (bounded: 60 s). */
export async function untilStatus(agent: RunningAgent, what: string, ok: (s: AgentStatus) => boolean): Promise<AgentStatus> {
  for (let i = 0; ; i++) {
    const s = await agent.status();
    if (ok(s)) return s;
    assert.ok(i < 600, `${what}: not reached in 60 s; warm pool ${JSON.stringify(s.warmPool)}\n${agent.log()}`);
    await sleep(100);
  }
}
