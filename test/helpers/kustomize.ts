/**
 * deploy/ rendered as `kubectl apply -k` would: by the real kustomize inside kubectl
 * (`kubectl kustomize DIR`). No kubectl that runs is an error naming why (install one:
 * scripts/install-test-deps.sh installs Debian's kubernetes-client where none is found).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { load, loadAll } from 'js-yaml';

export type K8sObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [k: string]: unknown;
};

interface Kustomization {
  namespace?: string;
  resources: string[];
  labels?: { pairs: Record<string, string> }[];
  images?: { name: string; newName?: string; newTag?: string }[];
}

/** The objects `kubectl kustomize dir` renders, and the kustomization.yaml it read. */
export function renderKustomization(dir: string): { objects: K8sObject[]; kustomization: Kustomization } {
  const kubectl = process.env.KUBECTL ?? 'kubectl';
  const r = spawnSync(kubectl, ['kustomize', dir], { encoding: 'utf8', maxBuffer: 16 << 20 });
  if (r.error !== undefined) throw new Error(`cannot run ${kubectl} kustomize (install kubectl: scripts/install-test-deps.sh): ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${kubectl} kustomize ${dir} failed (status ${r.status ?? r.signal}): ${r.stderr.trim()}`);
  const objects = loadAll(r.stdout).filter((d) => d !== null) as K8sObject[];
  const kustomization = load(readFileSync(join(dir, 'kustomization.yaml'), 'utf8')) as Kustomization;
  return { objects, kustomization };
}

export interface Container {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  [k: string]: unknown;
}

/** The pod spec of a workload (Deployment, DaemonSet, StatefulSet), else undefined. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the tests read manifests of any shape
export function podSpecOf(o: K8sObject): Record<string, any> | undefined {
  return (o.spec as { template?: { spec?: Record<string, unknown> } } | undefined)?.template?.spec;
}

export function containersOf(o: K8sObject): Container[] {
  const p = podSpecOf(o);
  return p ? [...((p.initContainers as Container[] | undefined) ?? []), ...((p.containers as Container[] | undefined) ?? [])] : [];
}
