/**
 * The runtime's side of CNI, as libcni (libcni/api.go) does it and containerd uses it: ADD runs
 * a list's plugins forward, each getting the previous one's result as `prevResult`, and caches
 * the final result; DEL runs them in reverse with the cached result; CHECK forward with it; GC
 * first DELs every cached attachment of the network not in the valid list, then (cniVersion
 * >= 1.1.0) sends GC to every plugin; STATUS asks each plugin (>= 1.1.0).
 *
 * Where this goes beyond libcni, it is for the "leave nothing behind" contract:
 * - a failed ADD is rolled back here: the failed plugin and every one before it get DEL (in
 *   reverse, with the last good result), and ChainError reports the cause and what the
 *   rollback could not clean;
 * - DEL keeps going past a failing plugin, reports all failures together, and keeps the cached
 *   result when anything failed so that a retry still has it (libcni stops at the first).
 * Every plugin call is bounded by `timeoutMs`.
 */
import { goMarshal, type GoJsonValue } from '../cni/go-json.js';
import { CniError } from '../cni/errors.js';
import { validateInterfaceName } from '../cni/skel-env.js';
import { CNI_NAME as VALID_NAME } from '../model/cni-name.js';
import { versionAtLeast } from '../cni/version.js';
import type { NetworkConfigList, PluginConf } from './conf-list.js';
import { ChainError, PluginError, PluginTimeoutError } from './errors.js';
import { type PluginArgs, execPlugin } from './exec-plugin.js';
import { findPlugin } from './find-plugin.js';
import { goCompare, goMapValue } from './go-map.js';
import { type GoResult, ResultFormatError, parseResult } from './go-result.js';
import { type CachedAttachment, DEFAULT_CACHE_DIR, ResultCache } from './result-cache.js';

/** The arguments of one attachment (libcni's RuntimeConf). */
export interface RuntimeConf {
  readonly containerId: string;
  /** Path of the network namespace ("" allowed for DEL). */
  readonly netns: string;
  readonly ifname: string;
  /** CNI_ARGS pairs; on DEL/CHECK default to what the cache recorded at ADD. */
  readonly args?: readonly (readonly [string, string])[];
  /** Capability data (portMappings, ips, …), sent only to plugins declaring the capability. */
  readonly capabilityArgs?: Readonly<Record<string, unknown>>;
}

export interface CniRuntimeOptions {
  /** Directories searched for plugin binaries, in order (CNI_PATH). */
  readonly binDirs: readonly string[];
  /** libcni's cache dir; results go to `<cacheDir>/results`. Default /var/lib/cni. */
  readonly cacheDir?: string;
  /** Bound on each plugin call; default 60 s. */
  readonly timeoutMs?: number;
  /** Receives a successful plugin's stderr (libcni copies it to its own). */
  readonly onStderr?: (text: string) => void;
}

/** An attachment GC must keep (types.GCAttachment). */
export interface GcAttachment {
  readonly containerId: string;
  readonly ifname: string;
}

type Verb = 'ADD' | 'DEL' | 'CHECK' | 'GC' | 'STATUS';

const atLeast = (v: string, min: string) => versionAtLeast(v || '0.1.0', min);

function validateRuntime(network: string, rt: RuntimeConf): void {
  if (!rt.containerId) throw new TypeError('container id: missing');
  if (!VALID_NAME.test(rt.containerId))
    throw new TypeError(`container id ${JSON.stringify(rt.containerId)}: invalid characters (letters, digits, "_", ".", "-")`);
  if (!VALID_NAME.test(network)) throw new TypeError(`network name ${JSON.stringify(network)}: invalid characters`);
  try {
    validateInterfaceName(rt.ifname);
  } catch (e) {
    throw new TypeError(`interface name ${JSON.stringify(rt.ifname)}: ${e instanceof CniError ? e.msg : (e as Error).message}`, { cause: e });
  }
}

/** libcni's buildOneConfig: the plugin's JSON with name, cniVersion, prevResult and runtimeConfig. */
export function pluginStdin(
  list: NetworkConfigList,
  plugin: PluginConf,
  prevResult: GoResult | undefined,
  rt: RuntimeConf | undefined,
  extra: Record<string, unknown> = {},
): Buffer {
  const rc: Record<string, unknown> = {};
  for (const [cap, on] of Object.entries(plugin.capabilities)) {
    if (on && rt?.capabilityArgs && Object.hasOwn(rt.capabilityArgs, cap)) rc[cap] = rt.capabilityArgs[cap];
  }
  const merged: Record<string, unknown> = { ...plugin.raw, name: list.name, cniVersion: list.cniVersion, ...extra };
  if (prevResult) merged.prevResult = prevResult;
  if (Object.keys(rc).length > 0) {
    // A second InjectConf round trip: everything, prevResult included, becomes a sorted map.
    merged.runtimeConfig = rc;
    return Buffer.from(goMarshal(goMapValue(merged)));
  }
  const out: Record<string, GoJsonValue> = {};
  for (const k of Object.keys(merged).sort(goCompare)) out[k] = k === 'prevResult' ? (merged[k] as GoResult) : goMapValue(merged[k]);
  return Buffer.from(goMarshal(out));
}

export class CniRuntime {
  readonly cache: ResultCache;
  readonly #binDirs: readonly string[];
  readonly #timeoutMs: number;
  readonly #onStderr: ((text: string) => void) | undefined;

  constructor(opts: CniRuntimeOptions) {
    this.#binDirs = Object.freeze([...opts.binDirs]);
    this.#timeoutMs = opts.timeoutMs ?? 60_000;
    if (!Number.isInteger(this.#timeoutMs) || this.#timeoutMs <= 0) {
      throw new RangeError(`Cannot create CniRuntime as 'timeoutMs' must be a positive integer: current value is ${opts.timeoutMs}`);
    }
    this.#onStderr = opts.onStderr;
    this.cache = new ResultCache(opts.cacheDir ?? DEFAULT_CACHE_DIR);
  }

  #args(verb: Verb, rt: RuntimeConf | undefined): PluginArgs {
    return { command: verb, containerId: rt?.containerId ?? '', netns: rt?.netns ?? '', ifname: rt?.ifname ?? '', args: rt?.args ?? [], path: this.#binDirs };
  }

  /** Runs one plugin; resolves with its stdout. Throws PluginNotFoundError / PluginError / PluginTimeoutError. */
  async #exec(verb: Verb, plugin: PluginConf, stdin: Buffer, rt: RuntimeConf | undefined): Promise<string> {
    const bin = findPlugin(plugin.type, this.#binDirs);
    return execPlugin(bin, plugin.type, stdin, this.#args(verb, rt), { timeoutMs: this.#timeoutMs, onStderr: this.#onStderr });
  }

  /**
   * ADD: the chain forward; the final result is cached and returned. On failure the plugins run
   * so far are DELeted (see the file comment) and ChainError is thrown; nothing is cached.
   */
  async add(list: NetworkConfigList, rt: RuntimeConf): Promise<GoResult> {
    validateRuntime(list.name, rt);
    let result: GoResult | undefined;
    for (const [i, plugin] of list.plugins.entries()) {
      try {
        const out = await this.#exec('ADD', plugin, pluginStdin(list, plugin, result, rt), rt);
        try {
          result = parseResult(out, list.cniVersion);
        } catch (e) {
          if (!(e instanceof ResultFormatError)) throw e;
          throw new PluginError(plugin.type, 'ADD', undefined, `exited 0 but printed no valid result: ${e.message}`, undefined, 0, null, '', {
            cause: e,
          });
        }
      } catch (e) {
        // A plugin that was not found never ran: nothing of its own to undo.
        const ran = e instanceof PluginError || e instanceof PluginTimeoutError;
        const rollback = await this.#rollback(list, ran ? i : i - 1, result, rt);
        throw new ChainError(list.name, plugin.type, 'ADD', e as Error, rollback);
      }
    }
    const entry: CachedAttachment = {
      containerId: rt.containerId,
      network: list.name,
      ifname: rt.ifname,
      config: list.bytes,
      netns: rt.netns,
      cniArgs: rt.args ?? [],
      capabilityArgs: rt.capabilityArgs ?? {},
      result: result!,
    };
    try {
      this.cache.write(entry);
    } catch (e) {
      // Without the entry no one could DEL with this result later: undo the whole chain now.
      const rollback = await this.#rollback(list, list.plugins.length - 1, result, rt);
      throw new ChainError(list.name, 'cache', 'ADD', new Error(`failed to set network "${list.name}" cached result: ${(e as Error).message}`), rollback);
    }
    return result!;
  }

  /** DELs plugins `last`..0 (reverse); returns the errors (empty when all went well). */
  async #rollback(list: NetworkConfigList, last: number, prev: GoResult | undefined, rt: RuntimeConf): Promise<Error[]> {
    const errors: Error[] = [];
    for (let j = last; j >= 0; j--) {
      const plugin = list.plugins[j]!;
      try {
        await this.#exec('DEL', plugin, pluginStdin(list, plugin, prev, rt), rt);
      } catch (e) {
        errors.push(e as Error);
      }
    }
    return errors;
  }

  /** Fills CNI_ARGS and capability args from the cache when the caller gave none. */
  #withCached(list: NetworkConfigList, rt: RuntimeConf): RuntimeConf {
    if (rt.args && rt.capabilityArgs) return rt;
    const cached = this.cache.get(list.name, rt.containerId, rt.ifname);
    return { ...rt, args: rt.args ?? cached?.cniArgs ?? [], capabilityArgs: rt.capabilityArgs ?? cached?.capabilityArgs ?? {} };
  }

  /**
   * DEL: every plugin in reverse with the cached result as prevResult (from 0.4.0). Idempotent.
   * All plugins are asked even if one fails; then ChainError for the first failure (the others
   * in `rollback`), and the cache entry is kept for a retry. On success the entry is removed.
   */
  async del(list: NetworkConfigList, rtIn: RuntimeConf): Promise<void> {
    validateRuntime(list.name, rtIn);
    const rt = this.#withCached(list, rtIn);
    let cached: GoResult | undefined;
    if (atLeast(list.cniVersion, '0.4.0')) {
      try {
        cached = this.cache.result(list.name, list.cniVersion, rt.containerId, rt.ifname);
      } catch {
        // An unreadable entry is dropped, as libcni does, and DEL goes on without it.
        this.cache.delete(list.name, rt.containerId, rt.ifname);
      }
    }
    const errors: { plugin: string; e: Error }[] = [];
    for (let i = list.plugins.length - 1; i >= 0; i--) {
      const plugin = list.plugins[i]!;
      try {
        await this.#exec('DEL', plugin, pluginStdin(list, plugin, cached, rt), rt);
      } catch (e) {
        errors.push({ plugin: plugin.type, e: e as Error });
      }
    }
    if (errors.length > 0)
      throw new ChainError(
        list.name,
        errors[0]!.plugin,
        'DEL',
        errors[0]!.e,
        errors.slice(1).map((x) => x.e),
      );
    this.cache.delete(list.name, rt.containerId, rt.ifname);
  }

  /** CHECK: refused below 0.4.0; a no-op with disableCheck; else each plugin with the cached result. */
  async check(list: NetworkConfigList, rtIn: RuntimeConf): Promise<void> {
    if (!atLeast(list.cniVersion, '0.4.0')) throw new TypeError(`configuration version ${JSON.stringify(list.cniVersion)} does not support the CHECK command`);
    if (list.disableCheck) return;
    validateRuntime(list.name, rtIn);
    const rt = this.#withCached(list, rtIn);
    const cached = this.cache.result(list.name, list.cniVersion, rt.containerId, rt.ifname);
    for (const plugin of list.plugins) {
      try {
        await this.#exec('CHECK', plugin, pluginStdin(list, plugin, cached, rt), rt);
      } catch (e) {
        throw new ChainError(list.name, plugin.type, 'CHECK', e as Error);
      }
    }
  }

  /**
   * GC: DEL for every cached attachment of this network not in `valid`, then (>= 1.1.0) GC on
   * every plugin with `cni.dev/valid-attachments`. Goes on past failures; AggregateError at the end.
   * Returns the attachments it deleted.
   */
  async gc(list: NetworkConfigList, valid: readonly GcAttachment[]): Promise<CachedAttachment[]> {
    if (list.disableGC) return [];
    const keep = new Set(valid.map((a) => `${a.containerId}\u0000${a.ifname}`));
    const errors: Error[] = [];
    const deleted: CachedAttachment[] = [];
    for (const a of this.cache.list()) {
      if (a.network !== list.name || keep.has(`${a.containerId}\u0000${a.ifname}`)) continue;
      try {
        await this.del(list, { containerId: a.containerId, netns: a.netns, ifname: a.ifname, args: a.cniArgs, capabilityArgs: a.capabilityArgs });
        deleted.push(a);
      } catch (e) {
        errors.push(new Error(`failed to delete stale attachment ${a.containerId} ${a.ifname}: ${(e as Error).message}`));
      }
    }
    if (atLeast(list.cniVersion, '1.1.0')) {
      const attachments = valid.map((a) => ({ containerID: a.containerId, ifname: a.ifname }));
      for (const plugin of list.plugins) {
        try {
          // #1101 in libcni: the spec first named the key cni.dev/attachments; both are sent.
          const stdin = pluginStdin(list, plugin, undefined, undefined, { 'cni.dev/valid-attachments': attachments, 'cni.dev/attachments': attachments });
          await this.#exec('GC', plugin, stdin, undefined);
        } catch (e) {
          errors.push(new Error(`failed to GC plugin ${plugin.type}: ${(e as Error).message}`));
        }
      }
    }
    if (errors.length > 0) throw new AggregateError(errors, `network "${list.name}": GC: ${errors.map((e) => e.message).join('; ')}`);
    return deleted;
  }

  /**
   * STATUS: each plugin in order, the first failure thrown (ChainError; its cause a PluginError
   * with code 50/51 when the plugin cannot serve ADD now). Below 1.1.0 nothing is asked and
   * `false` is returned, as libcni does; `true` when every plugin answered ready.
   */
  async status(list: NetworkConfigList): Promise<boolean> {
    if (!atLeast(list.cniVersion, '1.1.0')) return false;
    for (const plugin of list.plugins) {
      try {
        await this.#exec('STATUS', plugin, pluginStdin(list, plugin, undefined, undefined), undefined);
      } catch (e) {
        throw new ChainError(list.name, plugin.type, 'STATUS', e as Error);
      }
    }
    return true;
  }
}
