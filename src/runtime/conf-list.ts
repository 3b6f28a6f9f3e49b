/**
 * A network configuration list (`.conflist`) parsed as libcni's `NetworkConfFromBytes` does it,
 * validated once: `name` (a valid network name), `cniVersion` (or the highest usable entry of
 * `cniVersions`), `disableCheck` / `disableGC` / `loadOnlyInlinedPlugins` (bool or "true"/"false"),
 * and a non-empty `plugins` array whose members each have a `type`. Errors are ConfigError
 * naming the file and the field (`plugins[1].type`).
 */
import { ConfigError } from './errors.js';
import { CURRENT_VERSION, parseVersion, versionAtLeast } from '../cni/version.js';
import { CNI_NAME as VALID_NAME } from '../model/cni-name.js';
import { isObject, jsonTypeName } from '../cni/go-decode.js';

/** One plugin of a list: its `type`, declared `capabilities`, and its JSON as written. */
export interface PluginConf {
  readonly type: string;
  readonly capabilities: Readonly<Record<string, boolean>>;
  readonly raw: Readonly<Record<string, unknown>>;
}

export interface NetworkConfigList {
  readonly name: string;
  /** "" when the file has none (the spec reads it as 0.1.0). */
  readonly cniVersion: string;
  readonly disableCheck: boolean;
  readonly disableGC: boolean;
  readonly loadOnlyInlinedPlugins: boolean;
  readonly plugins: readonly PluginConf[];
  /** The bytes libcni caches as `config`: the file as read (or the up-converted list). */
  readonly bytes: Buffer;
  /** Where it was read from. */
  readonly file: string;
}

function parseJson(file: string, bytes: Buffer, what: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(bytes.toString('utf8'));
  } catch (e) {
    throw new ConfigError(file, '', `invalid JSON in ${what}: ${(e as Error).message}`, { cause: e });
  }
  if (!isObject(v)) throw new ConfigError(file, '', `${what} must be a JSON object, got ${jsonTypeName(v)}`);
  return v;
}

function bool(file: string, raw: Record<string, unknown>, key: string): boolean {
  const v = raw[key];
  if (v === undefined) return false;
  if (typeof v === 'boolean') return v;
  if (typeof v === 'string' && /^(true|false)$/i.test(v)) return v.toLowerCase() === 'true';
  throw new ConfigError(file, key, `must be true or false, got ${JSON.stringify(v)}`);
}

function checkVersion(file: string, field: string, v: string): void {
  try {
    parseVersion(v);
  } catch (e) {
    throw new ConfigError(file, field, `invalid version ${JSON.stringify(v)}: ${(e as Error).message}`, { cause: e });
  }
}

/** `cniVersion`, or the highest of `cniVersions` (plus `cniVersion`) not above what we implement. */
function listVersion(file: string, raw: Record<string, unknown>): string {
  const v = raw.cniVersion;
  if (v !== undefined && typeof v !== 'string') throw new ConfigError(file, 'cniVersion', `must be a string, got ${JSON.stringify(v)}`);
  const version = v ?? '';
  if (version !== '') checkVersion(file, 'cniVersion', version);
  const vs = raw.cniVersions;
  if (vs === undefined) return version;
  if (!Array.isArray(vs)) throw new ConfigError(file, 'cniVersions', `must be an array of versions, got ${JSON.stringify(vs)}`);
  const usable: string[] = [];
  vs.forEach((x, i) => {
    if (typeof x !== 'string') throw new ConfigError(file, `cniVersions[${i}]`, `must be a string, got ${JSON.stringify(x)}`);
    checkVersion(file, `cniVersions[${i}]`, x);
    if (versionAtLeast(CURRENT_VERSION, x)) usable.push(x);
  });
  if (version !== '' && versionAtLeast(CURRENT_VERSION, version)) usable.push(version);
  if (usable.length === 0) return version;
  let best = usable[0]!;
  for (const x of usable) if (!versionAtLeast(best, x)) best = x;
  return best;
}

/** Validates one plugin object (inline at `field`, or a whole file when `field` is ""). */
export function parsePluginConf(file: string, field: string, raw: unknown): PluginConf {
  const at = (k: string) => (field ? `${field}.${k}` : k);
  if (!isObject(raw)) throw new ConfigError(file, field, `a plugin must be a JSON object, got ${jsonTypeName(raw)}`);
  const type = raw.type;
  if (type === undefined || type === '') throw new ConfigError(file, at('type'), "missing 'type'");
  if (typeof type !== 'string') throw new ConfigError(file, at('type'), `must be a string, got ${JSON.stringify(type)}`);
  const caps = raw.capabilities ?? {};
  if (!isObject(caps) || Object.values(caps).some((c) => typeof c !== 'boolean')) {
    throw new ConfigError(file, at('capabilities'), `must be an object of booleans, got ${JSON.stringify(caps)}`);
  }
  return { type, capabilities: caps as Record<string, boolean>, raw };
}

/**
 * Parses a `.conflist`. `extraPlugins` are the sibling `<dir>/<name>/*.conf` plugins libcni
 * appends when `loadOnlyInlinedPlugins` is false (the caller reads them: it knows the dir).
 */
export function parseConfList(file: string, bytes: Buffer, extraPlugins: (name: string) => PluginConf[] = () => []): NetworkConfigList {
  const raw = parseJson(file, bytes, 'a network configuration list');
  const name = raw.name;
  if (name === undefined) throw new ConfigError(file, 'name', 'missing');
  if (typeof name !== 'string') throw new ConfigError(file, 'name', `must be a string, got ${JSON.stringify(name)}`);
  if (!VALID_NAME.test(name))
    throw new ConfigError(file, 'name', `invalid network name ${JSON.stringify(name)} (letters, digits, "_", ".", "-"; not starting with a punctuation mark)`);
  const cniVersion = listVersion(file, raw);
  const loadOnlyInlinedPlugins = bool(file, raw, 'loadOnlyInlinedPlugins');
  const list = raw.plugins;
  let plugins: PluginConf[] = [];
  if (list === undefined) {
    if (loadOnlyInlinedPlugins) throw new ConfigError(file, 'plugins', 'missing, and loadOnlyInlinedPlugins is true');
  } else {
    if (!Array.isArray(list)) throw new ConfigError(file, 'plugins', `must be an array, got ${jsonTypeName(list)}`);
    if (list.length === 0) throw new ConfigError(file, 'plugins', 'no plugins in list');
    plugins = list.map((p, i) => parsePluginConf(file, `plugins[${i}]`, p));
  }
  if (!loadOnlyInlinedPlugins) plugins = [...plugins, ...extraPlugins(name)];
  if (plugins.length === 0) throw new ConfigError(file, 'plugins', 'no plugin configs found');
  return {
    name,
    cniVersion,
    disableCheck: bool(file, raw, 'disableCheck'),
    disableGC: bool(file, raw, 'disableGC'),
    loadOnlyInlinedPlugins,
    plugins,
    bytes,
    file,
  };
}
