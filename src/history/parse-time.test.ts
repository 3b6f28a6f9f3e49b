import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { formatTime, parseOptionalTime, parseTime } from './parse-time.js';

const NOW = Date.UTC(2026, 2, 1, 12, 0, 0, 0);

describe('parseTime', () => {
  it('reads RFC 3339 with Z or an offset, with or without fractional seconds', () => {
    assert.equal(parseTime('--at', '2026-03-01T12:00:00Z'), NOW);
    assert.equal(parseTime('--at', '2026-03-01t12:00:00z'), NOW);
    assert.equal(parseTime('--at', '2026-03-01 12:00:00Z'), NOW);
    assert.equal(parseTime('--at', '2026-03-01T13:00:00+01:00'), NOW);
    assert.equal(parseTime('--at', '2026-03-01T06:30:00-05:30'), NOW);
    assert.equal(parseTime('--at', '2026-03-01T12:00:00.5Z'), NOW + 500);
    assert.equal(parseTime('--at', '2026-03-01T12:00:00.123Z'), NOW + 123);
    assert.equal(parseTime('--at', '2026-03-01T12:00:00.123999999Z'), NOW + 123, 'beyond milliseconds: dropped');
    assert.equal(parseTime('--at', '2024-02-29T00:00:00Z'), Date.UTC(2024, 1, 29));
    assert.equal(parseTime('--at', '0099-01-01T00:00:00Z'), new Date('0099-01-01T00:00:00Z').getTime(), 'a two-digit year is not taken for 19xx');
    assert.equal(parseTime('--at', '2016-12-31T23:59:60Z'), Date.UTC(2017, 0, 1), 'a leap second');
  });

  it('reads now and times relative to now', () => {
    assert.equal(parseTime('--at', 'now', NOW), NOW);
    assert.equal(parseTime('--at', '-30s', NOW), NOW - 30_000);
    assert.equal(parseTime('--since', '-30m', NOW), NOW - 30 * 60_000);
    assert.equal(parseTime('--since', '-2h', NOW), NOW - 2 * 3_600_000);
    assert.equal(parseTime('--since', '-7d', NOW), NOW - 7 * 86_400_000);
    assert.equal(parseTime('--since', ' -2h ', NOW), NOW - 2 * 3_600_000, 'surrounding blanks');
  });

  it('rejects anything else naming the flag and the value', () => {
    const cases: [string, RegExp][] = [
      ['', /expected an RFC 3339 time/],
      ['yesterday', /expected an RFC 3339 time .* or a time relative to now/],
      ['2026-03-01', /expected an RFC 3339 time/],
      ['2026-03-01T12:00:00', /no offset: add Z for UTC/],
      ['2026-03-01T12:00', /no offset/],
      ['2h', /a relative time lies in the past: -2h/],
      ['+2h', /a relative time lies in the past: -2h/],
      ['-2y', /expected an RFC 3339 time/],
      ['-1.5h', /expected an RFC 3339 time/],
      ['2026-13-01T00:00:00Z', /month 13 is not 01-12/],
      ['2026-02-29T00:00:00Z', /day 29 is not 01-28 in 2026-02/],
      ['2026-04-31T00:00:00Z', /day 31 is not 01-30/],
      ['2026-03-01T24:00:00Z', /hour 24/],
      ['2026-03-01T12:60:00Z', /minute 60/],
      ['2026-03-01T12:00:61Z', /second 61/],
      ['2026-03-01T12:00:00+24:00', /offset \+24:00/],
      ['2026-03-01T12:00:00+0100', /expected an RFC 3339 time/],
      ['1741000000000', /expected an RFC 3339 time/],
    ];
    for (const [text, why] of cases) {
      assert.throws(
        () => parseTime('--at', text, NOW),
        (e: unknown) => {
          assert.ok(e instanceof TypeError, String(e));
          assert.ok(e.message.startsWith(`invalid --at ${JSON.stringify(text)}: `), e.message);
          assert.match(e.message, why);
          return true;
        },
        text,
      );
    }
    assert.throws(() => parseTime('until', 'soon'), /^TypeError: invalid until "soon": /);
  });

  it('parseOptionalTime keeps absent absent', () => {
    assert.equal(parseOptionalTime('--at', undefined), undefined);
    assert.equal(parseOptionalTime('--at', 'now', NOW), NOW);
  });
});

describe('formatTime', () => {
  it('prints RFC 3339 in UTC with milliseconds, and parses back', () => {
    assert.equal(formatTime(NOW + 5), '2026-03-01T12:00:00.005Z');
    for (const t of [0, NOW, NOW + 999, Date.UTC(1999, 11, 31, 23, 59, 59, 1)]) assert.equal(parseTime('x', formatTime(t)), t);
  });
});
