/**
 * `podipam ipam history` through the built CLI on a real history file, filled through apply()
 * (test/helpers/history-fixture.ts): every holder of an address in order (reuse by another pod),
 * `--at` inside, between and outside holds and in a gap (exit codes 0, 3, 4), a time known only
 * within bounds printed as such, `--pod`, the jsonl export, bad input, a missing file, and the
 * file left untouched (read-only).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { openHistoryDb } from '../../src/history/sqlite-history-db.js';
import { DEFAULT_STORY as S, H, M, T0, cid, fillHistory } from '../helpers/history-fixture.js';
import { makeTempDir, type TempDir } from '../helpers/tmp.js';
import { runCli } from './serve-harness.js';

let dir: TempDir;
let file: string;
const iso = (t: number): string => new Date(t).toISOString();

before(() => {
  dir = makeTempDir('cli-history');
  file = join(dir.path, 'history.db');
  const db = openHistoryDb(file);
  try {
    fillHistory(db);
  } finally {
    db.close();
  }
});
after(() => dir?.remove());

function history(...args: string[]): ReturnType<typeof runCli> {
  return runCli(['ipam', 'history', ...args, '--history-db', file]);
}

test('ipam history ADDRESS: every holder in order, reuse by another pod, bounds shown as bounds, the gap', async () => {
  const r = await history(S.a);
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stdout.trimEnd().split('\n');
  assert.match(lines[0] ?? '', /^FROM\s+UNTIL\s+WHY\s+POD\s+UID\s+CONTAINER\s+IFNAME\s+NETWORK\s+NODE\s+POOL$/);
  assert.match(
    lines[1] ?? '',
    new RegExp(`^${iso(T0)}\\s+${iso(T0 + H)}\\s+del\\s+shop/web-1\\s+u1\\s+${cid(1).slice(0, 12)}\\s+eth0\\s+k8s-pod-network\\s+node-a\\s+default-ipv4$`),
  );
  assert.match(lines[2] ?? '', new RegExp(`^${iso(T0 + 2 * H)}\\s+between ${iso(T0 + 3 * H)} and ${iso(T0 + 4 * H)}\\s+unknown\\s+shop/web-2\\s+u2\\s`));
  assert.match(lines[3] ?? '', new RegExp(`^between ${iso(T0 + 3 * H)} and ${iso(T0 + 4 * H)}\\s+still held\\s+-\\s+shop/web-3\\s+u3\\s.*node-b`));
  assert.match(lines[4] ?? '', new RegExp(`^gap from ${iso(T0 + 3 * H)} to ${iso(T0 + 4 * H)}: etcd compacted revisions 31-39`));
  assert.equal(lines.length, 5, r.stdout);

  const j = await history(S.a, '-o', 'json');
  assert.equal(j.code, 0, j.stderr);
  const body = JSON.parse(j.stdout);
  assert.deepEqual(
    body.items.map((h: any) => h.pod.name),
    ['web-1', 'web-2', 'web-3'],
  );
  assert.deepEqual(body.items[0], {
    address: S.a,
    handle: `k8s-pod-network:${cid(1)}:eth0`,
    pod: { namespace: 'shop', name: 'web-1', uid: 'u1' },
    containerId: cid(1),
    ifname: 'eth0',
    network: 'k8s-pod-network',
    node: 'node-a',
    pool: 'default-ipv4',
    block: '10.244.0.0/26',
    from: { exact: true, at: iso(T0) },
    until: { exact: true, at: iso(T0 + H) },
    why: 'del',
    stillHeld: false,
  });
  assert.deepEqual(body.items[1].until, { exact: false, earliest: iso(T0 + 3 * H), at: iso(T0 + 4 * H) });
  assert.equal(body.items[2].until, null);
  assert.equal(body.items[2].stillHeld, true);
  assert.deepEqual(body.gaps, [{ from: iso(T0 + 3 * H), until: iso(T0 + 4 * H), cause: 'etcd compacted revisions 31-39' }]);

  // A window: only the holds overlapping it.
  const w = await history(S.a, '-o', 'json', '--since', iso(T0 + 90 * M), '--until', iso(T0 + 150 * M));
  assert.deepEqual(
    JSON.parse(w.stdout).items.map((h: any) => h.pod.name),
    ['web-2'],
  );
  // Held before history began: its start is unknown, never shown as an instant.
  const c = await history(S.c, '-o', 'json');
  const held = JSON.parse(c.stdout).items;
  assert.equal(held.length, 1, c.stdout);
  assert.equal(held[0].from.exact, false, JSON.stringify(held[0]));
  assert.deepEqual(held[0].until, { exact: true, at: iso(T0 + 7 * H) });
  assert.match((await history(S.c)).stdout, /^between \S+ and \S+\s+\S+\s+release\s/m);
  // Never held.
  const none = await history('10.244.0.99');
  assert.equal(none.code, 0);
  assert.match(none.stdout, /^no holder of 10\.244\.0\.99 in the history/);
});

test('ipam history ADDRESS --at: inside a hold (0), between and outside holds (3), in a gap (4)', async () => {
  const inside = await history(S.a, '--at', iso(T0 + 30 * M));
  assert.equal(inside.code, 0, inside.stderr);
  assert.equal(
    inside.stdout,
    `${S.a} at ${iso(T0 + 30 * M)}: pod shop/web-1 (uid u1), container ${cid(1)}, interface eth0, network k8s-pod-network, on node node-a, pool default-ipv4; from ${iso(T0)} until ${iso(T0 + H)} (released: del)\n`,
  );
  const second = await history(S.a, '--at', '2026-03-01T12:30:00+00:00');
  assert.equal(second.code, 0);
  assert.match(
    second.stdout,
    /: pod shop\/web-2 \(uid u2\).*from 2026-03-01T12:00:00.000Z until between 2026-03-01T13:00:00.000Z and 2026-03-01T14:00:00.000Z \(released: unknown\)/,
  );
  const between = await history(S.a, '--at', '2026-03-01T12:30:00+01:00');
  assert.equal(between.code, 3, between.stdout + between.stderr);
  assert.equal(between.stdout, `${S.a} at ${iso(T0 + 90 * M)}: none (no pod held it)\n`);
  const beforeAll = await history(S.a, '--at', iso(T0 - H));
  assert.equal(beforeAll.code, 3);
  const gap = await history(S.a, '--at', iso(T0 + 3 * H + 30 * M));
  assert.equal(gap.code, 4, gap.stdout + gap.stderr);
  // web-2's end lies somewhere in the gap: unknown, with that interval.
  assert.equal(
    gap.stdout,
    `${S.a} at ${iso(T0 + 3 * H + 30 * M)}: unknown (between ${iso(T0 + 3 * H)} and ${iso(T0 + 4 * H)}: the hold of ${S.a} by k8s-pod-network:${cid(2)}:eth0 ended at an unknown time in this interval)\n`,
  );
  const inGap = await history(S.b, '--at', iso(T0 + 3 * H + 30 * M));
  assert.equal(inGap.code, 4, inGap.stdout + inGap.stderr);
  assert.equal(
    inGap.stdout,
    `${S.b} at ${iso(T0 + 3 * H + 30 * M)}: unknown (between ${iso(T0 + 3 * H)} and ${iso(T0 + 4 * H)}: etcd compacted revisions 31-39)\n`,
  );
  const later = await history(S.a, '--at', iso(T0 + 5 * H), '-o', 'json');
  assert.equal(later.code, 0);
  const lj = JSON.parse(later.stdout);
  assert.equal(lj.known, true);
  assert.equal(lj.holder.pod.name, 'web-3');
  assert.deepEqual(lj.holder.from, { exact: false, earliest: iso(T0 + 3 * H), at: iso(T0 + 4 * H) });
  const gj = JSON.parse((await history(S.b, '--at', iso(T0 + 3 * H + 30 * M), '--json')).stdout);
  assert.deepEqual(gj, {
    address: S.b,
    at: iso(T0 + 3 * H + 30 * M),
    known: false,
    gap: { from: iso(T0 + 3 * H), until: iso(T0 + 4 * H), cause: 'etcd compacted revisions 31-39' },
  });
  const nj = JSON.parse((await history(S.a, '--at', iso(T0 + 90 * M), '-o', 'json')).stdout);
  assert.deepEqual(nj, { address: S.a, at: iso(T0 + 90 * M), known: true, holder: null });
});

test('ipam history --pod: every address of every incarnation; the export as JSON Lines in time order', async () => {
  const p = await history('--pod', 'shop/web-1');
  assert.equal(p.code, 0, p.stderr);
  const rows = p.stdout.trimEnd().split('\n');
  assert.match(rows[0] ?? '', /^ADDRESS\s+FROM\s+UNTIL/);
  assert.match(rows[1] ?? '', new RegExp(`^${S.a.replace(/\./g, '\\.')}\\s+${iso(T0)}\\s+${iso(T0 + H)}\\s+del\\s+shop/web-1\\s+u1\\s`));
  assert.match(rows[2] ?? '', new RegExp(`^${S.b.replace(/\./g, '\\.')}\\s+${iso(T0 + 5 * H)}\\s+${iso(T0 + 6 * H)}\\s+cni-gc\\s+shop/web-1\\s+u1b\\s`));
  const none = await history('--pod', 'shop/nobody');
  assert.match(none.stdout, /^pod shop\/nobody held no address in the history/);

  const x = await history('--since', iso(T0), '-o', 'jsonl');
  assert.equal(x.code, 0, x.stderr);
  const recs = x.stdout
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l));
  const time = (r: any): number => Date.parse(r.event === 'gap' ? r.until : r.time.at);
  for (let i = 1; i < recs.length; i++) assert.ok(time(recs[i - 1]) <= time(recs[i]), `time order at ${i}: ${JSON.stringify(recs.slice(i - 1, i + 1))}`);
  const kinds = recs.map((r) => `${r.event}:${r.address ?? ''}:${r.pod?.name ?? ''}`);
  for (const k of [
    `assigned:${S.a}:web-1`,
    `released:${S.a}:web-1`,
    `assigned:${S.a}:web-2`,
    `released:${S.a}:web-2`,
    `assigned:${S.a}:web-3`,
    'gap::',
    `assigned:${S.b}:web-1`,
    `released:${S.b}:web-1`,
    `released:${S.c}:`,
  ]) {
    assert.ok(kinds.includes(k), `${k} in ${kinds.join(' ')}`);
  }
  const rel = recs.find((r) => r.event === 'released' && r.address === S.a && r.pod?.name === 'web-1');
  assert.deepEqual([rel.time, rel.why, rel.containerId], [{ exact: true, at: iso(T0 + H) }, 'del', cid(1)]);
  const lost = recs.find((r) => r.event === 'released' && r.pod?.name === 'web-2');
  assert.deepEqual(lost.time, { exact: false, earliest: iso(T0 + 3 * H), at: iso(T0 + 4 * H) });
  // --since / --until bound the export; --limit caps it.
  const part = (await history('--since', iso(T0 + 5 * H), '--until', iso(T0 + 6 * H), '-o', 'jsonl')).stdout
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.deepEqual(
    part.map((r) => `${r.event}:${r.address}`),
    [`assigned:${S.b}`, `released:${S.b}`],
  );
  assert.equal((await history('--limit', '2', '-o', 'jsonl')).stdout.trimEnd().split('\n').length, 2);
  const table = await history('--since', iso(T0 + 5 * H));
  assert.match(table.stdout, /^TIME\s+EVENT\s+ADDRESS\s+POD\s+NODE\s+WHY$/m);
  assert.match(table.stdout, new RegExp(`^${iso(T0 + 6 * H)}\\s+released\\s+${S.b.replace(/\./g, '\\.')}\\s+shop/web-1\\s+node-a\\s+cni-gc$`, 'm'));
});

test('ipam history: bad input names the flag and the value (exit 2); a missing file says what makes one (exit 1); the file is not written', async () => {
  const before = readFileSync(file);
  const mtime = statSync(file).mtimeMs;
  const cases: [string[], RegExp][] = [
    [[S.a, '--at', 'yesterday'], /invalid --at "yesterday": expected an RFC 3339 time/],
    [[S.a, '--at', '2026-03-01T10:00:00'], /invalid --at "2026-03-01T10:00:00": no offset/],
    [[S.a, '--since', '2h'], /invalid --since "2h": a relative time lies in the past/],
    [[S.a, '--since', '-1h', '--until', '-2h'], /--since "-1h" is after --until "-2h"/],
    [[S.a, '--at', 'now', '--since', '-1h'], /--at asks about one instant/],
    [['--at', 'now'], /--at needs an ADDRESS/],
    [['10.244.0.300'], /invalid IP address "10\.244\.0\.300"/],
    [[S.a, '--pod', 'shop/web-1'], /give an ADDRESS or --pod, not both/],
    [['--pod', 'Shop/Web'], /invalid --pod "Shop\/Web": want NAMESPACE\/NAME/],
    [[S.a, '-o', 'csv'], /invalid -o\/--output "csv": expected table, wide, json, yaml, jsonl/],
    [['--limit', '0'], /invalid --limit "0"/],
    [[S.a, '--limit', '5'], /--limit bounds the export/],
  ];
  for (const [args, why] of cases) {
    const r = await history(...args);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stdout}${r.stderr}`);
    assert.match(r.stderr, why, args.join(' '));
    assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack');
  }
  const missing = join(dir.path, 'nope', 'history.db');
  const m = await runCli(['ipam', 'history', S.a, '--history-db', missing]);
  assert.equal(m.code, 1);
  assert.equal(m.stderr, `podipam: error: no history at ${missing}: is podipam serve running with history on? (give its file with --history-db FILE)\n`);
  // The default file is DATA_DIR/history.db.
  const d = await runCli(['ipam', 'history', S.a, '--at', iso(T0 + 30 * M)], { PODIPAM_DATA_DIR: dir.path });
  assert.equal(d.code, 0, d.stderr);
  assert.match(d.stdout, /shop\/web-1/);
  assert.ok(readFileSync(file).equals(before), 'the history file is unchanged');
  assert.equal(statSync(file).mtimeMs, mtime);
});
