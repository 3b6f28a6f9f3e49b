/**
 * The ADD/DEL sequences of the allocation-history e2e tests, on one node, logged as they run
 * (history-log.ts): pods named as the kubelet names them (CNI_ARGS), a pod recreated under a new
 * container id, an address freed by DEL and given to another pod, a CNI GC releasing an
 * attachment its valid list left out. The caller says how a call reaches podipam (the per-pod
 * plugin, the shim and an agent) and checks the history against the log.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { type CallLog, type PodName, bare } from './history-log.js';
import type { PluginCall, PluginRun } from './plugin.js';

/** CNI_ARGS naming the pod as the kubelet does. */
export function podArgs(pod: PodName, containerId: string): string {
  return `IgnoreUnknown=1;K8S_POD_NAMESPACE=${pod.namespace};K8S_POD_NAME=${pod.name};K8S_POD_INFRA_CONTAINER_ID=${containerId};K8S_POD_UID=uid-${containerId}`;
}

/** Adds the pod's CNI_ARGS to a call. */
export function forPod(c: PluginCall, pod: PodName): PluginCall {
  return { ...c, args: podArgs(pod, c.containerId as string) };
}

/** How a CNI call reaches podipam: runs `command` for the pod's container and returns the run. */
export type Runner = (command: 'ADD' | 'DEL', containerId: string, pod: PodName) => Promise<PluginRun>;

/** ADD, logged; returns the bare addresses answered. */
export async function loggedAdd(run: Runner, log: CallLog, pod: PodName, containerId: string): Promise<string[]> {
  const start = Date.now();
  const r = await run('ADD', containerId, pod);
  const end = Date.now();
  assert.equal(r.code, 0, `ADD ${pod.namespace}/${pod.name} ${containerId}: ${r.stdout}${r.stderr}`);
  const ips = (JSON.parse(r.stdout) as { ips: { address: string }[] }).ips.map((i) => bare(i.address));
  log.added(pod, containerId, ips, start, end);
  return ips;
}

/** DEL, logged (reason "del"). */
export async function loggedDel(run: Runner, log: CallLog, pod: PodName, containerId: string): Promise<void> {
  const start = Date.now();
  const r = await run('DEL', containerId, pod);
  const end = Date.now();
  assert.equal(r.code, 0, `DEL ${pod.namespace}/${pod.name} ${containerId}: ${r.stdout}${r.stderr}`);
  log.released(containerId, 'del', start, end);
}

/** A pause that leaves instants certainly between two calls (for `--at` between holds). */
export const pause = (): Promise<void> => sleep(30);

export const WEB: PodName = { namespace: 'shop', name: 'web-0' };

/**
 * On a node whose block has 5 usable addresses (a /29) and nothing else allocated: 5 pods fill
 * it (web-0 among them, deleted and recreated under a new container id), the next ADD after a
 * DEL can only get the freed address — every reuse is forced, not hoped for. Leaves 5 pods
 * held: b, web-0 (second incarnation), e, f, g. Returns the container ids of those.
 */
export async function reuseScenario(run: Runner, log: CallLog, tag: string): Promise<{ held: string[]; reused: string[] }> {
  const pod = (name: string): PodName => ({ namespace: 'shop', name });
  const id = (n: string): string => `${tag}-${n}`;
  const [a] = await loggedAdd(run, log, WEB, id('web-c1'));
  await loggedAdd(run, log, pod('b'), id('b'));
  await loggedAdd(run, log, pod('c'), id('c'));
  await pause();
  await loggedDel(run, log, WEB, id('web-c1'));
  await pause();
  await loggedAdd(run, log, WEB, id('web-c2'));
  await loggedAdd(run, log, pod('e'), id('e'));
  // The block has one free address left: web-0's first.
  const [f] = await loggedAdd(run, log, pod('f'), id('f'));
  assert.equal(f, a, `f got web-0's freed address (the only one left in the block)`);
  const cAddr = log.open(id('c'))!.addresses[0] as string;
  await pause();
  await loggedDel(run, log, pod('c'), id('c'));
  await pause();
  const [g] = await loggedAdd(run, log, pod('g'), id('g'));
  assert.equal(g, cAddr, `g got c's freed address`);
  return { held: [id('b'), id('web-c2'), id('e'), id('f'), id('g')], reused: [a as string, cAddr] };
}
