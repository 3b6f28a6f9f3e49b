/**
 * The pod's annotations as the runtime hands them to a plugin whose conflist entry declares
 * `"capabilities": {"io.kubernetes.cri.pod-annotations": true}`: containerd puts them in
 * `runtimeConfig["io.kubernetes.cri.pod-annotations"]` (an object of strings), and `bridge`
 * passes its runtimeConfig on to the IPAM plugin.
 */
import { CniCode, CniError } from '../cni/errors.js';
import type { NetConf } from '../cni/types.js';

export const POD_ANNOTATIONS_CAPABILITY = 'io.kubernetes.cri.pod-annotations';

/** The annotations, undefined when the runtime passed none; code 7 naming the key when they are not an object of strings. */
export function runtimePodAnnotations(conf: NetConf): Readonly<Record<string, string>> | undefined {
  const v = conf.runtimeConfig?.[POD_ANNOTATIONS_CAPABILITY];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'object' || Array.isArray(v) || !Object.values(v).every((x) => typeof x === 'string')) {
    throw new CniError(
      CniCode.InvalidConfig,
      `runtimeConfig[${JSON.stringify(POD_ANNOTATIONS_CAPABILITY)}]: want an object of strings, got ${JSON.stringify(v).slice(0, 200)}`,
    );
  }
  return v as Readonly<Record<string, string>>;
}
