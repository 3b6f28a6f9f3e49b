/**
 * What `podipam version` reports: package version, the commit it was built from
 * (dist/build-info.json, written by scripts/build-info.mjs at build time, else "unknown"), the
 * CNI spec versions the plugin speaks, Node.js, and whether the native parts are there.
 */
import { existsSync, readFileSync } from 'node:fs';
import { SUPPORTED_VERSIONS } from '../cni/version.js';
import { findShim, PACKAGE_ROOT } from '../install/find-shim.js';

export interface VersionInfo {
  readonly version: string;
  readonly commit: string;
  readonly cniVersions: readonly string[];
  readonly node: string;
  /** Path of the CNI shim, or null when it was not built. */
  readonly shim: string | null;
  /** Path of the flock addon, or null when it was not built. */
  readonly flockAddon: string | null;
}

function readJson(path: string): Record<string, unknown> | undefined {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

export function versionInfo(root: string = PACKAGE_ROOT): VersionInfo {
  const pkg = readJson(`${root}package.json`);
  const build = readJson(`${root}dist/build-info.json`);
  const commit = typeof build?.commit === 'string' ? `${build.commit}${build.dirty === true ? '-dirty' : ''}` : 'unknown';
  const flock = `${root}build/Release/flock.node`;
  return {
    version: typeof pkg?.version === 'string' ? pkg.version : 'unknown',
    commit,
    cniVersions: [...SUPPORTED_VERSIONS],
    node: process.version,
    shim: findShim([`${root}dist/bin/podipam-cni`]) ?? null,
    flockAddon: existsSync(flock) ? flock : null,
  };
}

export function versionText(v: VersionInfo): string {
  return [
    `podipam ${v.version}`,
    `commit: ${v.commit}`,
    `CNI spec versions: ${v.cniVersions.join(', ')}`,
    `Node.js: ${v.node}`,
    `CNI shim: ${v.shim ?? 'absent (npm run build makes it)'}`,
    `flock addon: ${v.flockAddon ?? 'absent (npm install builds it; the local back end needs it)'}`,
  ].join('\n');
}
