/**
 * Config discovery as libcni's `LoadNetworkConf` does it: the `.conflist` files of the directory
 * in lexical order, the first whose `name` matches; failing that, the deprecated single-plugin
 * `.conf` / `.json` files, the first match up-converted to a one-plugin list. A file that cannot
 * be read or parsed on the way stops the search with a ConfigError naming it (libcni does the
 * same: one broken file hides the ones after it). Nothing found is NetworkNotFoundError.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import { ConfigError, NetworkNotFoundError } from './errors.js';
import { type NetworkConfigList, type PluginConf, parseConfList, parsePluginConf } from './conf-list.js';
import { goCompare, goMapValue } from './go-map.js';
import { goMarshal } from '../cni/go-json.js';

/** The files of `dir` (not directories) with one of `exts`, in Go's sort order; [] if no dir. */
export function confFiles(dir: string, exts: readonly string[]): string[] {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new ConfigError(dir, '', `cannot read the directory: ${(e as Error).message}`, { cause: e });
  }
  return entries
    .filter((d) => !d.isDirectory() && exts.includes(extname(d.name)))
    .map((d) => join(dir, d.name))
    .sort(goCompare);
}

function readBytes(file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (e) {
    throw new ConfigError(file, '', `cannot read: ${(e as Error).message}`, { cause: e });
  }
}

/** The `<dir>/<name>/*.conf` plugins libcni appends to a list (unless loadOnlyInlinedPlugins). */
function siblingPlugins(dir: string): (name: string) => PluginConf[] {
  return (name) =>
    confFiles(join(dir, name), ['.conf']).map((f) => {
      const bytes = readBytes(f);
      let raw: unknown;
      try {
        raw = JSON.parse(bytes.toString('utf8'));
      } catch (e) {
        throw new ConfigError(f, '', `invalid JSON in a plugin configuration: ${(e as Error).message}`, { cause: e });
      }
      return parsePluginConf(f, '', raw);
    });
}

/** Reads and parses one `.conflist`. */
export function loadConfListFile(file: string): NetworkConfigList {
  return parseConfList(file, readBytes(file), siblingPlugins(join(file, '..')));
}

/**
 * Reads a legacy single-plugin file and returns the list libcni's `ConfListFromConf` makes of it
 * (bytes re-marshalled as Go does: keys sorted, compact). With `wanted`, a file naming another
 * network is skipped (undefined) before its other fields are judged, as libcni skips it.
 */
export function loadLegacyConfFile(file: string, wanted?: string): NetworkConfigList | undefined {
  const bytes = readBytes(file);
  let raw: unknown;
  try {
    raw = JSON.parse(bytes.toString('utf8'));
  } catch (e) {
    throw new ConfigError(file, '', `invalid JSON in a network configuration: ${(e as Error).message}`, { cause: e });
  }
  parsePluginConf(file, '', raw);
  const obj = raw as Record<string, unknown>;
  const name = typeof obj.name === 'string' ? obj.name : '';
  if (wanted !== undefined && name !== wanted) return undefined;
  const cniVersion = typeof obj.cniVersion === 'string' ? obj.cniVersion : '';
  const up = Buffer.from(goMarshal(goMapValue({ cniVersion, name, plugins: [obj] })));
  return parseConfList(file, up, () => []);
}

/** Finds network `name` in `dir` (see the file comment). */
export function loadNetwork(dir: string, name: string): NetworkConfigList {
  const lists = confFiles(dir, ['.conflist']);
  for (const f of lists) {
    const l = loadConfListFile(f);
    if (l.name === name) return l;
  }
  const singles = confFiles(dir, ['.conf', '.json']);
  for (const f of singles) {
    const l = loadLegacyConfFile(f, name);
    if (l) return l;
  }
  throw new NetworkNotFoundError(dir, name, lists.length === 0 && singles.length === 0);
}

/** Every network `dir` defines, each once (the file that would win for its name), lists first. */
export function listNetworks(dir: string): NetworkConfigList[] {
  const seen = new Map<string, NetworkConfigList>();
  for (const f of confFiles(dir, ['.conflist'])) {
    const l = loadConfListFile(f);
    if (!seen.has(l.name)) seen.set(l.name, l);
  }
  for (const f of confFiles(dir, ['.conf', '.json'])) {
    const l = loadLegacyConfFile(f)!;
    if (!seen.has(l.name)) seen.set(l.name, l);
  }
  return [...seen.values()];
}
