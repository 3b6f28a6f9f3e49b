/**
 * How the history's readers (CLI, API) show holds, gaps and export records: times as RFC 3339
 * in UTC; a time known only to lie in an interval (a gap of the history, a hold that began before
 * history did) is shown as that interval — `{"exact": false, "earliest": A, "at": B}` in JSON,
 * "between A and B" in text — never as one instant. Pure.
 */
import type { HistoryGap, HistoryTime, Hold, HolderAt, HolderInfo, ReleaseEvidence } from '../model/history.js';
import type { HistoryRecord } from './history-db.js';
import { formatTime } from './parse-time.js';

/** A time in JSON: exact, or known only to lie in (earliest, at]. */
export type TimeJson = { readonly exact: true; readonly at: string } | { readonly exact: false; readonly earliest: string; readonly at: string };

export function timeJson(t: HistoryTime): TimeJson {
  return t.earliest === undefined ? { exact: true, at: formatTime(t.at) } : { exact: false, earliest: formatTime(t.earliest), at: formatTime(t.at) };
}

/** A time in words: the instant, or "between A and B". */
export function timeText(t: HistoryTime): string {
  return t.earliest === undefined ? formatTime(t.at) : `between ${formatTime(t.earliest)} and ${formatTime(t.at)}`;
}

/** The holder's fields, absent ones left out (pod: {namespace, name, uid?}). */
function holderJson(h: HolderInfo): Record<string, unknown> {
  const out: Record<string, unknown> = { address: h.address, handle: h.handle };
  if (h.pod)
    out.pod = h.pod.uid === undefined ? { namespace: h.pod.namespace, name: h.pod.name } : { namespace: h.pod.namespace, name: h.pod.name, uid: h.pod.uid };
  for (const k of ['containerId', 'ifname', 'network', 'node', 'pool', 'block'] as const) if (h[k] !== undefined) out[k] = h[k];
  return out;
}

/** A release's evidence (runtime-absent): the container id, the two answers' times (RFC 3339), the age at the earlier (ms). */
export function evidenceJson(e: ReleaseEvidence): { containerId: string; lists: [string, string]; ageMs: number } {
  return { containerId: e.containerId, lists: [formatTime(e.lists[0]), formatTime(e.lists[1])], ageMs: e.ageMs };
}

/** The evidence in words. */
export function evidenceText(e: ReleaseEvidence): string {
  return `the runtime listed no sandbox ${e.containerId} at ${formatTime(e.lists[0])} nor at ${formatTime(e.lists[1])}; ${Math.round(e.ageMs / 1000)} s old then`;
}

/** One hold: the holder, `from`, `until` (null: still held), `why` (null while held) and, for a runtime-absent release, its `evidence`. */
export function holdJson(h: Hold): Record<string, unknown> {
  return {
    ...holderJson(h),
    from: timeJson(h.from),
    until: h.until ? timeJson(h.until) : null,
    why: h.until?.why ?? null,
    ...(h.until?.evidence ? { evidence: evidenceJson(h.until.evidence) } : {}),
    stillHeld: h.until === undefined,
  };
}

export function gapJson(g: HistoryGap): { from: string; until: string; cause: string } {
  return { from: formatTime(g.from), until: formatTime(g.until), cause: g.cause };
}

/** The answer about one instant: `known` with `holder` (null: none), or not known with the gap. */
export function holderAtJson(address: string, at: number, r: HolderAt): Record<string, unknown> {
  return r.known
    ? { address, at: formatTime(at), known: true, holder: r.hold ? holdJson(r.hold) : null }
    : { address, at: formatTime(at), known: false, gap: gapJson(r.gap) };
}

/** The time a record sorts by in the export (a gap: its end, when the follower recorded it). */
export function recordTime(r: HistoryRecord): number {
  return r.event === 'gap' ? r.until : r.at;
}

/** One line of the export: `{"event": "assigned"|"released", "time": {…}, …holder, "why"?}` or `{"event": "gap", from, until, cause}`. */
export function recordJson(r: HistoryRecord): Record<string, unknown> {
  if (r.event === 'gap') return { event: 'gap', ...gapJson(r) };
  const time = timeJson(r.earliest === undefined ? { at: r.at } : { at: r.at, earliest: r.earliest });
  return {
    event: r.event,
    time,
    ...holderJson(r),
    ...(r.event === 'released' ? { why: r.why, ...(r.evidence ? { evidence: evidenceJson(r.evidence) } : {}) } : {}),
  };
}

/** `ns/name` of a holder, or undefined. */
export function podText(h: HolderInfo): string | undefined {
  return h.pod ? `${h.pod.namespace}/${h.pod.name}` : undefined;
}

/** A hold in one line of words (the CLI's `--at` answer). */
export function holdSentence(h: Hold): string {
  const who = h.pod ? `pod ${podText(h)}${h.pod.uid ? ` (uid ${h.pod.uid})` : ''}` : `handle "${h.handle}" (no pod named)`;
  const parts = [who];
  if (h.containerId) parts.push(`container ${h.containerId}`);
  if (h.ifname) parts.push(`interface ${h.ifname}`);
  if (h.network) parts.push(`network ${h.network}`);
  if (h.node) parts.push(`on node ${h.node}`);
  if (h.pool) parts.push(`pool ${h.pool}`);
  const span = `from ${timeText(h.from)} ${h.until ? `until ${timeText(h.until)} (released: ${h.until.why}${h.until.evidence ? `: ${evidenceText(h.until.evidence)}` : ''})` : '(still held)'}`;
  return `${parts.join(', ')}; ${span}`;
}

/** A gap in words. */
export function gapSentence(g: HistoryGap): string {
  return `gap from ${formatTime(g.from)} to ${formatTime(g.until)}: ${g.cause}`;
}
