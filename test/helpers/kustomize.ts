/**
 * An offline render of a kustomization.yaml, for the subset deploy/ uses (kubectl and kustomize
 * are not installable here): `resources` (files, multi-document YAML), `namespace` (set on
 * namespaced objects and on ServiceAccount subjects of bindings, as kustomize does), `labels`
 * (pairs added to metadata.labels only) and `images` (newName/newTag on matching container
 * images). Any other key is an error, so deploy/ cannot silently grow past what this renders.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { load, loadAll } from 'js-yaml';

export type K8sObject = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string> }; [k: string]: unknown };

const CLUSTER_SCOPED = new Set(['Namespace', 'ClusterRole', 'ClusterRoleBinding', 'PriorityClass', 'CustomResourceDefinition']);
const KNOWN_KEYS = new Set(['apiVersion', 'kind', 'namespace', 'resources', 'labels', 'images']);

interface Kustomization {
  namespace?: string;
  resources: string[];
  labels?: { pairs: Record<string, string> }[];
  images?: { name: string; newName?: string; newTag?: string }[];
}

export function loadYamlDocs(path: string): K8sObject[] {
  return loadAll(readFileSync(path, 'utf8')).filter((d) => d !== null) as K8sObject[];
}

export function renderKustomization(dir: string): { objects: K8sObject[]; kustomization: Kustomization } {
  const k = load(readFileSync(join(dir, 'kustomization.yaml'), 'utf8')) as Kustomization & Record<string, unknown>;
  for (const key of Object.keys(k)) if (!KNOWN_KEYS.has(key)) throw new Error(`kustomization.yaml: key "${key}" is not rendered by test/helpers/kustomize.ts`);
  const objects = k.resources.flatMap((r) => loadYamlDocs(join(dir, r)));
  for (const o of objects) {
    if (k.namespace && !CLUSTER_SCOPED.has(o.kind)) o.metadata.namespace = k.namespace;
    if (k.namespace && (o.kind === 'ClusterRoleBinding' || o.kind === 'RoleBinding')) {
      for (const s of (o.subjects as { kind: string; namespace?: string }[]) ?? []) if (s.kind === 'ServiceAccount') s.namespace = k.namespace;
    }
    for (const l of k.labels ?? []) o.metadata.labels = { ...o.metadata.labels, ...l.pairs };
    for (const c of containersOf(o)) {
      for (const img of k.images ?? []) {
        const [name, tag] = splitImage(c.image);
        if (name === img.name) c.image = `${img.newName ?? name}:${img.newTag ?? tag}`;
      }
    }
  }
  return { objects, kustomization: k };
}

export interface Container {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  [k: string]: unknown;
}

/** The pod spec of a workload (Deployment, DaemonSet, StatefulSet), else undefined. */
export function podSpecOf(o: K8sObject): Record<string, any> | undefined {
  return (o.spec as any)?.template?.spec;
}

export function containersOf(o: K8sObject): Container[] {
  const p = podSpecOf(o);
  return p ? [...(p.initContainers ?? []), ...(p.containers ?? [])] : [];
}

function splitImage(image: string): [string, string | undefined] {
  const i = image.lastIndexOf(':');
  return i > image.lastIndexOf('/') ? [image.slice(0, i), image.slice(i + 1)] : [image, undefined];
}
