/**
 * The pod a workload controller would create from a rendered Deployment, DaemonSet or
 * StatefulSet: the template's labels and annotations, a generated name (a Deployment's
 * `NAME-<hash>-<suffix>`, a DaemonSet's `NAME-<suffix>`, a StatefulSet's `NAME-<ordinal>` with
 * its claims from `volumeClaimTemplates` as `persistentVolumeClaim` volumes named
 * `TEMPLATE-POD`), a fresh uid, and `spec.nodeName` set as the scheduler sets it. Pure but for
 * the random suffix and uid.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { Pod } from './plan-pod.js';
import { listAt, objAt, onlyKnown, UnsupportedFieldError } from './unsupported-field-error.js';

export interface Workload {
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace?: string };
  readonly spec?: unknown;
}

const suffix = (n: number): string => [...randomBytes(n)].map((b) => 'bcdfghjklmnpqrstvwxz2456789'[b % 27]).join('');

/** A pod of `w` for node `nodeName` (`ordinal`: the StatefulSet replica, 0 by default). */
export function podOfWorkload(w: Workload, nodeName: string, ordinal = 0): Pod & { readonly spec: Record<string, unknown> } {
  if (!['Deployment', 'DaemonSet', 'StatefulSet'].includes(w.kind))
    throw new UnsupportedFieldError('kind', `${JSON.stringify(w.kind)} has no pod template the test kubelet runs`);
  const spec = objAt(w.spec, 'spec');
  const template = objAt(spec.template, 'spec.template');
  onlyKnown(template, 'spec.template', ['metadata', 'spec']);
  const meta = objAt(template.metadata, 'spec.template.metadata');
  onlyKnown(meta, 'spec.template.metadata', ['labels', 'annotations']);
  const podSpec: Record<string, unknown> = { ...objAt(template.spec, 'spec.template.spec') };
  const namespace = w.metadata.namespace ?? 'default';
  const labels: Record<string, string> = { ...(meta.labels as Record<string, string> | undefined) };
  let name: string;
  if (w.kind === 'StatefulSet') {
    name = `${w.metadata.name}-${ordinal}`;
    Object.assign(labels, { 'statefulset.kubernetes.io/pod-name': name, 'apps.kubernetes.io/pod-index': String(ordinal) });
    const claims = listAt(spec.volumeClaimTemplates, 'spec.volumeClaimTemplates').map((t, i) => {
      const n = String(objAt(t.metadata, `spec.volumeClaimTemplates[${i}].metadata`).name);
      return { name: n, persistentVolumeClaim: { claimName: `${n}-${name}` } };
    });
    podSpec.volumes = [...((podSpec.volumes as unknown[] | undefined) ?? []), ...claims];
  } else if (w.kind === 'Deployment') {
    name = `${w.metadata.name}-${suffix(5)}${suffix(5).slice(0, 5)}-${suffix(5)}`;
  } else {
    name = `${w.metadata.name}-${suffix(5)}`;
  }
  return {
    metadata: {
      name,
      namespace,
      uid: randomUUID(),
      labels,
      ...(meta.annotations !== undefined ? { annotations: meta.annotations as Record<string, string> } : {}),
    },
    spec: { ...podSpec, nodeName },
  };
}
