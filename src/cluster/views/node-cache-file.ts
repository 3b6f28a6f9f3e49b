/**
 * The hint file a CNI plugin run restores its ViewCache from and saves it to
 * (`<dir>/<hash of datastore URL>-<node>.json`), next to the node lock (`….lock`). Written
 * to a temporary file and renamed, so a reader never sees half a file; anything unreadable is
 * ignored (an empty cache costs round trips, never correctness). The hints hold datastore
 * revisions: if the datastore behind a URL is replaced (wiped, restored from a backup), delete
 * the directory, as one would any cache keyed by revisions.
 */
import { createHash } from 'node:crypto';
import { fs, path } from '../../util/builtins.js';
import { replaceFile } from '../../util/replace-file.js';
import { ViewCache } from './view-cache.js';

export class NodeCacheFile {
  readonly path: string;
  readonly lockPath: string;

  constructor(
    dir: string,
    datastoreUrl: string,
    readonly node: string,
  ) {
    const id = createHash('sha256').update(datastoreUrl).digest('hex').slice(0, 16);
    this.path = path.join(dir, `${id}-${node}.json`);
    this.lockPath = path.join(dir, `${id}-${node}.lock`);
  }

  /** Creates the directory; false when that is impossible (the plugin then runs without hints). */
  prepare(dir: string): boolean {
    try {
      fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
      return true;
    } catch {
      return false;
    }
  }

  /** The saved hints, or an empty cache. Never throws. */
  load(): ViewCache {
    const cache = new ViewCache();
    try {
      cache.restore(this.node, fs.readFileSync(this.path, 'utf8'));
    } catch {
      /* no file yet */
    }
    return cache;
  }

  /** Saves the hints; failures are ignored (the next run just starts colder). */
  save(cache: ViewCache): void {
    try {
      replaceFile(this.path, cache.save(this.node), 0o600);
    } catch {
      /* best effort */
    }
  }
}
