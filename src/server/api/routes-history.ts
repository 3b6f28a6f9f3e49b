/**
 * The allocation history (read token), from the store serve keeps (`deps.history`; 503 "history
 * is off" without one):
 *
 *   GET /api/v1/history?address=IP[&since=T][&until=T]   {address, items: [hold…], gaps: […]}
 *   GET /api/v1/history?address=IP&at=T                  {address, at, known, holder|null} or {…, known: false, gap}
 *   GET /api/v1/history?pod=NS/NAME[&since=T][&until=T]  {pod, items: [hold…], gaps: […]}
 *   GET /api/v1/history?since=T[&until=T][&limit=N][&format=json|jsonl]   the export, in time order:
 *       {items: [record…], next?} or JSON Lines (application/x-ndjson, the next page's `since`
 *       in the `podipam-next-since` header) — at most `limit` (default 1000, at most 10000) records
 *
 * Times in: RFC 3339 with an offset or relative (now, -2h, -7d); out: RFC 3339 in UTC, a time
 * known only within bounds as `{"exact": false, "earliest", "at"}` (src/history/format-history.ts).
 */
import { formatAddr, parseAddr } from '../../ip/index.js';
import { parsePodRef } from '../../model/pod-ref.js';
import type { HistoryDb, HistoryRecord, TimeRange } from '../../history/history-db.js';
import { gapJson, holderAtJson, holdJson, recordJson, recordTime } from '../../history/format-history.js';
import { formatTime, parseTime } from '../../history/parse-time.js';
import { exactJson } from '../../util/exact-json.js';
import type { ApiDeps } from './api-deps.js';
import { badField, HttpError } from '../http/http-error.js';
import { RawResponse, type HandlerSpec } from '../http/http-server.js';
import type { Router } from '../http/router.js';
import { queryInt } from '../http/validate.js';

export const EXPORT_LIMIT_DEFAULT = 1000;
export const EXPORT_LIMIT_MAX = 10_000;

const PARAMS = new Set(['address', 'pod', 'at', 'since', 'until', 'limit', 'format']);

export function addHistoryRoutes(r: Router<HandlerSpec>, d: Pick<ApiDeps, 'history'>): void {
  r.add('GET', '/api/v1/history', {
    run: (c) => {
      for (const k of c.query.keys()) if (!PARAMS.has(k)) throw badField(k, `unknown query parameter "${k}": use ${[...PARAMS].join(', ')}`);
      const db = d.history;
      if (!db) throw new HttpError(503, 'history_off', 'history is off: podipam serve runs without its history store (see --history-db)');
      const now = Date.now();
      const time = (name: string): number | undefined => {
        const v = c.query.get(name);
        if (v === null) return undefined;
        try {
          return parseTime(name, v, now);
        } catch (e) {
          throw badField(name, (e as Error).message);
        }
      };
      const at = time('at');
      const since = time('since');
      const until = time('until');
      if (since !== undefined && until !== undefined && since > until)
        throw badField('since', `since ${JSON.stringify(c.query.get('since'))} is after until ${JSON.stringify(c.query.get('until'))}`);
      const addressText = c.query.get('address');
      const podText = c.query.get('pod');
      if (addressText !== null && podText !== null) throw badField('pod', 'give address or pod, not both');
      if (at !== undefined && addressText === null) throw badField('at', 'at asks who held an address at one instant: give address too');
      if (at !== undefined && (since !== undefined || until !== undefined)) throw badField('at', 'at asks about one instant: give it without since/until');
      const format = c.query.get('format') ?? 'json';
      if (format !== 'json' && format !== 'jsonl') throw badField('format', `format must be json or jsonl: got ${JSON.stringify(format)}`);
      const exporting = addressText === null && podText === null;
      if (!exporting && c.query.has('limit')) throw badField('limit', 'limit bounds the export (no address, no pod)');
      const range: TimeRange = { ...(since !== undefined ? { since } : {}), ...(until !== undefined ? { until } : {}) };

      if (addressText !== null) {
        let address: string;
        try {
          address = formatAddr(parseAddr(addressText));
        } catch (e) {
          throw badField('address', `address must be an IPv4 or IPv6 address: ${(e as Error).message}`);
        }
        if (at !== undefined)
          return answer(format, [holderAtJson(address, at, db.holderAt(address, at))], () => holderAtJson(address, at, db.holderAt(address, at)));
        const items = db.holdsOfAddress(address, range).map(holdJson);
        return answer(format, items, () => ({ address, items, gaps: db.gaps(range).map(gapJson) }));
      }
      if (podText !== null) {
        let pod;
        try {
          pod = parsePodRef('pod', podText);
        } catch (e) {
          throw badField('pod', (e as Error).message);
        }
        const items = db.holdsOfPod(pod.namespace, pod.name, range).map(holdJson);
        return answer(format, items, () => ({ pod: `${pod.namespace}/${pod.name}`, items, gaps: db.gaps(range).map(gapJson) }));
      }
      const limit = queryInt(c.query, 'limit', EXPORT_LIMIT_DEFAULT, 1, EXPORT_LIMIT_MAX);
      const page = exportPage(db, since ?? 0, until, limit);
      const items = page.records.map(recordJson);
      if (format === 'jsonl') return jsonl(items, page.next === undefined ? {} : { 'podipam-next-since': formatTime(page.next) });
      return page.next === undefined ? { items } : { items, next: formatTime(page.next) };
    },
  });
}

function answer(format: string, lines: readonly unknown[], json: () => unknown): unknown {
  return format === 'jsonl' ? jsonl(lines) : json();
}

function jsonl(lines: readonly unknown[], headers: Readonly<Record<string, string>> = {}): RawResponse {
  return new RawResponse(200, 'application/x-ndjson; charset=utf-8', lines.map((l) => exactJson(l) + '\n').join(''), {
    'cache-control': 'no-store',
    ...headers,
  });
}

/**
 * One page of the export: at most `limit` records from `since` (inclusive) up to `until`. A page
 * never ends inside one millisecond: when the limit falls among records of the same time, those
 * are left for the next page, whose `since` (`next`) is that time — or, when the whole page is
 * one millisecond, every record of it is returned and `next` is the millisecond after.
 */
export function exportPage(db: HistoryDb, since: number, until: number | undefined, limit: number): { records: HistoryRecord[]; next?: number } {
  const got: HistoryRecord[] = [];
  for (const r of db.records(since, limit + 1)) {
    if (until !== undefined && recordTime(r) > until) break;
    got.push(r);
  }
  if (got.length <= limit) return { records: got };
  const cut = recordTime(got[limit] as HistoryRecord);
  let end = limit;
  while (end > 0 && recordTime(got[end - 1] as HistoryRecord) === cut) end--;
  if (end > 0) return { records: got.slice(0, end), next: cut };
  // Every record of the page has one time: take all of that millisecond.
  const same: HistoryRecord[] = [];
  for (const r of db.records(cut)) {
    if (recordTime(r) !== cut) break;
    same.push(r);
  }
  return { records: same, next: cut + 1 };
}
