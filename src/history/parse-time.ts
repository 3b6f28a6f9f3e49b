/**
 * The times the history's readers take (`podipam ipam history --at/--since/--until`, the API's
 * `at`, `since`, `until`): an RFC 3339 date-time with its offset (`2026-03-01T12:00:00Z`,
 * `2026-03-01T13:00:00.250+01:00`), or relative to now: `now`, `-30s`, `-30m`, `-2h`, `-7d`.
 * Pure: `now` is passed in.
 */

/** What the error says a value should look like. */
export const TIME_HINT =
  'expected an RFC 3339 time with its offset (2026-03-01T12:00:00Z, 2026-03-01T13:00:00.5+01:00) or a time relative to now (now, -30s, -30m, -2h, -7d)';

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;
const RELATIVE = /^-(\d{1,9})(s|m|h|d)$/;
const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/**
 * Milliseconds since the epoch of `text`; TypeError `invalid NAME "TEXT": …` (NAME: the flag or
 * parameter, e.g. `--at`) naming what is wrong. Fractions of a millisecond are dropped.
 */
export function parseTime(name: string, text: string, now: number = Date.now()): number {
  const bad = (why: string): TypeError => new TypeError(`invalid ${name} ${JSON.stringify(text)}: ${why}`);
  const t = text.trim();
  if (t === 'now') return now;
  const rel = RELATIVE.exec(t);
  if (rel) return now - Number(rel[1]) * UNIT_MS[rel[2] as keyof typeof UNIT_MS];
  const m = RFC3339.exec(t);
  if (!m) {
    if (/^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(t)) throw bad(`no offset: add Z for UTC or +HH:MM (${TIME_HINT})`);
    if (/^\+?\d+[smhd]$/.test(t)) throw bad(`a relative time lies in the past: -${t.replace(/^\+/, '')} (${TIME_HINT})`);
    throw bad(TIME_HINT);
  }
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  if (month < 1 || month > 12) throw bad(`month ${m[2]} is not 01-12`);
  const days = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (day < 1 || day > days) throw bad(`day ${m[3]} is not 01-${days} in ${m[1]}-${m[2]}`);
  if (hour > 23) throw bad(`hour ${m[4]} is not 00-23`);
  if (minute > 59) throw bad(`minute ${m[5]} is not 00-59`);
  // 60: a leap second (RFC 3339 allows it); it counts as the next minute's first second.
  if (second > 60) throw bad(`second ${m[6]} is not 00-60`);
  const ms = m[7] === undefined ? 0 : Number(m[7].padEnd(3, '0').slice(0, 3));
  let offset = 0;
  if (m[8] === undefined) {
    const oh = Number(m[10]);
    const om = Number(m[11]);
    if (oh > 23 || om > 59) throw bad(`offset ${m[9]}${m[10]}:${m[11]} is not -23:59 to +23:59`);
    offset = (m[9] === '-' ? -1 : 1) * (oh * 60 + om) * 60_000;
  }
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day);
  d.setUTCHours(hour, minute, second, ms);
  return d.getTime() - offset;
}

/** parseTime for a value that may be absent. */
export function parseOptionalTime(name: string, text: string | undefined, now: number = Date.now()): number | undefined {
  return text === undefined ? undefined : parseTime(name, text, now);
}

/** An instant as RFC 3339 in UTC with milliseconds: `2026-03-01T12:00:00.000Z`. */
export function formatTime(ms: number): string {
  return new Date(ms).toISOString();
}
