import { statSync } from 'node:fs';
import { join } from 'node:path';
import { PluginNotFoundError } from './errors.js';

/**
 * The plugin binary for `type`, as libcni's `FindInPath`: the first of `dirs` holding a regular
 * file of that name. A name with a path separator is refused (a config must not run an
 * arbitrary binary); so are "", "." and "..". Throws PluginNotFoundError.
 */
export function findPlugin(type: string, dirs: readonly string[]): string {
  if (type === '') throw new PluginNotFoundError(type, dirs, 'no plugin name provided');
  if (type.includes('/') || type === '.' || type === '..') {
    throw new PluginNotFoundError(
      type,
      dirs,
      `invalid plugin name: ${JSON.stringify(type)} (a plugin is named by its file name in the bin dirs, never by a path)`,
    );
  }
  if (dirs.length === 0) throw new PluginNotFoundError(type, dirs, 'no plugin directories given');
  for (const d of dirs) {
    const p = join(d, type);
    try {
      if (statSync(p).isFile()) return p;
    } catch {
      // not here; try the next directory
    }
  }
  throw new PluginNotFoundError(type, dirs);
}

/** Splits a `:`-separated bin-dir list (empty parts dropped). */
export function splitPath(list: string): string[] {
  return list.split(':').filter((d) => d !== '');
}
