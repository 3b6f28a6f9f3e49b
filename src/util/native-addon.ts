/**
 * The project's native addons (binding.gyp → build/Release/<name>.node, built by node-gyp at
 * `npm install`): flock(2), SO_PEERCRED, the local back end's many-small-files reader, its reservation
 * writer and its directory watch (inotify), and the agent's real-time scheduling (sched).
 * Loaded with process.dlopen rather than createRequire, so the per-pod plugin does not start the
 * CommonJS loader (~2 ms per pod). Every file that imports this one sits at dist/src/<dir>/
 * (the plugin bundle in dist/bundle/plugin/ too), so the relative path holds for all of them.
 */
export type AddonName = 'flock' | 'peercred' | 'read_files' | 'reserve_file' | 'dir_watch' | 'sched';

const loaded = new Map<AddonName, unknown>();

/** The addon's exports; throws (the dlopen error) when it is missing or cannot load. */
export function loadAddon<T>(name: AddonName): T {
  let mod = loaded.get(name);
  if (mod === undefined) {
    const m = { exports: {} as T };
    process.dlopen(m, decodeURIComponent(new URL(`../../../build/Release/${name}.node`, import.meta.url).pathname));
    loaded.set(name, (mod = m.exports));
  }
  return mod as T;
}

/** As loadAddon, or null when it cannot be loaded (callers that have a fallback). */
export function tryLoadAddon<T>(name: AddonName): T | null {
  try {
    return loadAddon<T>(name);
  } catch {
    return null;
  }
}
