/**
 * Where the CNI binary that install-cni copies comes from: the native shim `npm run build`
 * makes (dist/bin/podipam-cni), else the one node-gyp builds at `npm install`
 * (build/Release/podipam-cni), both relative to this package's root.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The package root: dist/src/install/find-shim.js is three levels below it. */
export const PACKAGE_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

export const SHIM_CANDIDATES: readonly string[] = [`${PACKAGE_ROOT}dist/bin/podipam-cni`, `${PACKAGE_ROOT}build/Release/podipam-cni`];

/** The first candidate that exists, else undefined. */
export function findShim(candidates: readonly string[] = SHIM_CANDIDATES): string | undefined {
  return candidates.find((p) => existsSync(p));
}
