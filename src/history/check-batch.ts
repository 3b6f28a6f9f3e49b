/** The checks of a history batch before it is applied: a TypeError naming the field and the value, nothing written. */
import type { HistoryTime } from '../model/history.js';
import type { HistoryBatch } from './history-db.js';

function checkTime(what: string, t: HistoryTime | undefined): void {
  if (t === undefined || !Number.isFinite(t.at)) throw new TypeError(`history batch: ${what}.at must be a finite number, got ${JSON.stringify(t?.at)}`);
  if (t.earliest !== undefined && !(Number.isFinite(t.earliest) && t.earliest <= t.at)) {
    throw new TypeError(`history batch: ${what}.earliest must be a finite number not after ${what}.at (${t.at}), got ${JSON.stringify(t.earliest)}`);
  }
}

export function checkBatch(b: HistoryBatch): void {
  const str = (what: string, v: unknown): void => {
    if (typeof v !== 'string' || v === '') throw new TypeError(`history batch: ${what} must be a non-empty string, got ${JSON.stringify(v)}`);
  };
  b.ends.forEach((e, i) => {
    str(`ends[${i}].address`, e.address);
    str(`ends[${i}].handle`, e.handle);
    checkTime(`ends[${i}].until`, e.until);
  });
  b.starts.forEach((s, i) => {
    str(`starts[${i}].address`, s.address);
    str(`starts[${i}].handle`, s.handle);
    checkTime(`starts[${i}].from`, s.from);
  });
  (b.gaps ?? []).forEach((g, i) => {
    if (!(Number.isFinite(g.from) && Number.isFinite(g.until) && g.from <= g.until)) {
      throw new TypeError(`history batch: gaps[${i}] must have finite from <= until, got ${JSON.stringify({ from: g.from, until: g.until })}`);
    }
  });
  str('position.source', b.position.source);
  if (!Number.isSafeInteger(b.position.revision) || b.position.revision < 0) {
    throw new TypeError(`history batch: position.revision must be a non-negative integer, got ${JSON.stringify(b.position.revision)}`);
  }
  if (!Number.isFinite(b.position.at)) throw new TypeError(`history batch: position.at must be a finite number, got ${JSON.stringify(b.position.at)}`);
  if (b.position.identity !== undefined) str('position.identity', b.position.identity);
}
