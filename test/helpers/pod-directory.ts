/**
 * A PodDirectory (src/model/pod-directory.ts) over fixed pods and namespace annotations, synced,
 * counting its pod lookups: the agent's watch-fed cache as the back ends see it, for unit tests.
 */
import type { CachedPod, PodDirectory } from '../../src/model/pod-directory.js';

export function mapDirectory(pods: readonly CachedPod[], namespaces: Record<string, Record<string, string>> = {}): PodDirectory & { lookups: number } {
  const byName = new Map(pods.map((p) => [`${p.namespace}/${p.name}`, p]));
  const d = {
    lookups: 0,
    pod(namespace: string, name: string): CachedPod | undefined {
      d.lookups++;
      return byName.get(`${namespace}/${name}`);
    },
    namespaceAnnotations: (ns: string) => namespaces[ns],
    synced: true,
  };
  return d;
}

/** A cached pod on node n1. */
export const cachedPod = (
  namespace: string,
  name: string,
  ownerKind: string | undefined,
  uid = `uid-${name}`,
  annotations: Record<string, string> = {},
): CachedPod => ({ namespace, name, uid, ownerKind, annotations, node: 'n1' });
