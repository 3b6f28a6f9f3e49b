/**
 * A datastore restored from a backup or replaced at the same URL, as the history follower sees it
 * (pure; history-follower.ts does the reads and the writes).
 *
 * - replacedCause: the datastore the follower finds is not the one its position was written for
 *   when its identity differs from the position's (a new SQLite file or etcd cluster, a backup
 *   restored into it) or its revision is below the position's (an image put back).
 * - rebaselineChanges: the history cannot say what happened in the gap, so every open hold ends
 *   and every hold of the listing starts at a time known only to lie in it — even a warm pod's
 *   stated start (the backup's word, not the datastore's history) — and every address inside the
 *   gap answers "unknown".
 * - withoutStaleStamps: a stamp older than the gap's start, seen after it, was written back by the
 *   restore (a backup holds the stamps of its time): not a writer's time, so it times nothing.
 */
import { decodeStamp, STAMP_PREFIX } from '../cluster/records/index.js';
import type { HistoryGap, Hold } from '../model/history.js';
import type { Entry, WatchEvent } from '../store/index.js';
import { HoldState } from './derive-holds.js';
import type { FollowPosition, HoldEnd, HoldStart } from './history-db.js';

/** Why the datastore found (`identity`, `revision`) is not the one `pos` followed; undefined when it is. */
export function replacedCause(pos: FollowPosition | undefined, identity: string, revision: number): string | undefined {
  if (pos === undefined) return undefined;
  if (pos.identity !== undefined && pos.identity !== identity)
    return `the datastore was replaced or restored: it is ${identity}, the history followed ${pos.identity}`;
  if (revision < pos.revision) return `the datastore was restored or replaced: its revision went back from ${pos.revision} to ${revision}`;
  return undefined;
}

export interface Rebaseline {
  readonly ends: HoldEnd[];
  readonly starts: HoldStart[];
  /** The follower's state from here on: the listing's holds and caches. */
  readonly state: HoldState;
  readonly problems: string[];
}

/** The ends and starts that replace the history's open holds (`open`) by the listing's, all inside `gap`. */
export function rebaselineChanges(open: readonly Hold[], entries: readonly Entry[], gap: HistoryGap): Rebaseline {
  const time = { at: gap.until, earliest: gap.from };
  const ends: HoldEnd[] = open.map((h) => ({ address: h.address, handle: h.handle, until: time, why: 'unknown' }));
  const state = new HoldState();
  const d = state.relist(entries, time);
  return { ends, starts: d.starts.map((s) => ({ ...s, from: time })), state, problems: d.problems };
}

/** `events` less the stamp puts older than `staleBefore` (0: none is stale); undecodable ones stay (derive-holds reports them). */
export function withoutStaleStamps(events: WatchEvent[], staleBefore: number): WatchEvent[] {
  if (staleBefore === 0) return events;
  return events.filter((e) => {
    if (e.type !== 'put' || !e.key.startsWith(STAMP_PREFIX)) return true;
    try {
      return decodeStamp(e.key, e.value).at >= staleBefore;
    } catch {
      return true;
    }
  });
}
