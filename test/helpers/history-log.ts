/**
 * The allocation-history e2e tests' own record of what happened: every CNI call (or other
 * release: a serve GC) with its start and end time (ms, this machine's clock — the writers' clock
 * too), the pod, the container id and the addresses answered. From it, the holds `ipam history`
 * must show: each hold of an address from within [ADD start, ADD end] until within [release
 * start, release end], in order, with the release's reason. Also: reading `ipam history` as JSON
 * (times in RFC 3339) into plain milliseconds, and polling it until the follower has caught up.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { runCli } from '../e2e/serve-harness.js';

export interface PodName {
  readonly namespace: string;
  readonly name: string;
}

/** What the log knows of one attachment's life. */
export interface LoggedAttachment {
  readonly containerId: string;
  readonly pod: PodName;
  readonly addresses: readonly string[];
  /** The ADD call's start and end. */
  readonly from: readonly [number, number];
  /** The release's start and end (DEL, GC, …), absent while held. */
  until?: readonly [number, number];
  why?: string;
}

/** Bare address of a CNI `ips[].address` ("10.0.0.5/26" → "10.0.0.5"). */
export const bare = (cidr: string): string => cidr.split('/')[0] as string;

export class CallLog {
  readonly attachments: LoggedAttachment[] = [];

  /** Runs `fn`, timing it (Date.now() before and after). */
  static async timed<T>(fn: () => Promise<T>): Promise<{ value: T; start: number; end: number }> {
    const start = Date.now();
    const value = await fn();
    return { value, start, end: Date.now() };
  }

  /** An ADD that answered `addresses` (bare or CIDR) for the pod's container. */
  added(pod: PodName, containerId: string, addresses: readonly string[], start: number, end: number): LoggedAttachment {
    assert.ok(!this.open(containerId), `the log already has ${containerId} held`);
    const a: LoggedAttachment = { containerId, pod, addresses: addresses.map(bare), from: [start, end] };
    this.attachments.push(a);
    return a;
  }

  /** The open attachment of `containerId`, if any. */
  open(containerId: string): LoggedAttachment | undefined {
    return this.attachments.find((a) => a.containerId === containerId && a.until === undefined);
  }

  /** A release of `containerId`'s addresses for `why` between `start` and `end`. */
  released(containerId: string, why: string, start: number, end: number): LoggedAttachment {
    const a = this.open(containerId);
    assert.ok(a, `the log has no open attachment of ${containerId}`);
    a.until = [start, end];
    a.why = why;
    return a;
  }

  /** Every address the log has seen, in order of first use. */
  addresses(): string[] {
    return [...new Set(this.attachments.flatMap((a) => a.addresses))];
  }

  /** The holds `address` must show, oldest first. */
  holdsOf(address: string): LoggedAttachment[] {
    return this.attachments.filter((a) => a.addresses.includes(address)).sort((x, y) => x.from[0] - y.from[0]);
  }

  /** The attachments of a pod (every incarnation), oldest first. */
  ofPod(pod: PodName): LoggedAttachment[] {
    return this.attachments.filter((a) => a.pod.namespace === pod.namespace && a.pod.name === pod.name).sort((x, y) => x.from[0] - y.from[0]);
  }
}

/** A time as the history's JSON gives it (RFC 3339 text, ms, or `{at, earliest?}`), in ms; `exact` false when only an interval is known. */
export interface Instant {
  readonly at: number;
  readonly exact: boolean;
}

function instant(v: unknown, what: string): Instant {
  if (typeof v === 'number') return { at: v, exact: true };
  if (typeof v === 'string') {
    const at = Date.parse(v);
    assert.ok(Number.isFinite(at), `${what}: ${JSON.stringify(v)} is not a time`);
    return { at, exact: true };
  }
  assert.ok(typeof v === 'object' && v !== null && 'at' in v, `${what}: ${JSON.stringify(v)} is not a time`);
  const o = v as { at: unknown; earliest?: unknown; exact?: unknown };
  return { at: instant(o.at, what).at, exact: o.exact !== false && (o.earliest === undefined || o.earliest === null) };
}

/** One hold as `ipam history -o json` shows it, times in ms. */
export interface ShownHold {
  readonly address: string;
  readonly containerId?: string;
  readonly pod?: { namespace: string; name: string; uid?: string };
  readonly handle?: string;
  readonly from: Instant;
  readonly until?: Instant & { why: string };
  readonly raw: unknown;
}

export function shownHold(h: any): ShownHold {
  const until = h.until === undefined || h.until === null ? undefined : { ...instant(h.until, 'until'), why: String(h.until.why ?? h.why) };
  return { address: h.address, containerId: h.containerId, pod: h.pod, handle: h.handle, from: instant(h.from, 'from'), ...(until ? { until } : {}), raw: h };
}

/** The holds in an `ipam history` JSON answer (an array, or an object with `holds`). */
export function holdsIn(answer: any): ShownHold[] {
  const list = Array.isArray(answer) ? answer : (answer?.holds ?? answer?.items);
  assert.ok(Array.isArray(list), `no holds in ${JSON.stringify(answer)}`);
  return list.map(shownHold);
}

/** The `--at` answer: known (with the holder or none) or unknown. */
export interface ShownAt {
  readonly known: boolean;
  readonly hold?: ShownHold;
  readonly raw: unknown;
}

export function atIn(answer: any): ShownAt {
  const known = answer?.known !== false;
  const h = answer?.hold ?? answer?.holder;
  return { known, ...(h ? { hold: shownHold(h) } : {}), raw: answer };
}

/** Exit codes of `ipam history ADDRESS --at T`: a holder, none, unknown (in a gap). */
export const AT_EXIT = { holder: 0, none: 3, unknown: 4 } as const;

/** `podipam ipam history ARGS… -o json` on the history file `db`; the parsed answer. */
export async function history(db: string, args: readonly string[]): Promise<any> {
  return (await historyRun(db, args)).answer;
}

/** The same, with the exit code (with --at: 0, 3 or 4; else 0). */
export async function historyRun(db: string, args: readonly string[]): Promise<{ answer: any; code: number | null }> {
  const r = await runCli(['ipam', 'history', ...args, '--history-db', db, '-o', 'json']);
  const ok: readonly (number | null)[] = args.includes('--at') ? Object.values(AT_EXIT) : [0];
  assert.ok(ok.includes(r.code), `ipam history ${args.join(' ')}: exit ${r.code}\n${r.stdout}${r.stderr}`);
  return { answer: JSON.parse(r.stdout), code: r.code };
}

/** Where the test reads the history: `podipam ipam history` (the CLI on serve's file) or serve's API. */
export interface HistoryReader {
  readonly name: string;
  holds(address: string): Promise<ShownHold[]>;
  at(address: string, at: number): Promise<ShownAt>;
  pod(pod: PodName): Promise<ShownHold[]>;
}

/** The CLI on the history file `db`; `--at` answers must exit 0 (a holder), 3 (none) or 4 (unknown) as they say. */
export function cliReader(db: string): HistoryReader {
  return {
    name: 'podipam ipam history',
    holds: async (address) => holdsIn(await history(db, [address])),
    at: async (address, at) => {
      const r = await historyRun(db, [address, '--at', new Date(at).toISOString()]);
      const a = atIn(r.answer);
      assert.equal(
        r.code,
        !a.known ? AT_EXIT.unknown : a.hold ? AT_EXIT.holder : AT_EXIT.none,
        `the exit code of --at says what its answer does: ${JSON.stringify(a.raw)}`,
      );
      return a;
    },
    pod: async (pod) => holdsIn(await history(db, ['--pod', `${pod.namespace}/${pod.name}`])),
  };
}

/** serve's GET /api/v1/history at `base` (with no token: loopback reads). */
export function apiReader(base: string): HistoryReader {
  const get = async (query: string): Promise<any> => {
    const res = await fetch(`${base}/api/v1/history?${query}`, { signal: AbortSignal.timeout(15_000) });
    const text = await res.text();
    assert.equal(res.status, 200, `GET /api/v1/history?${query}: ${res.status} ${text}`);
    return JSON.parse(text);
  };
  return {
    name: 'GET /api/v1/history',
    holds: async (address) => holdsIn(await get(`address=${encodeURIComponent(address)}`)),
    at: async (address, at) => atIn(await get(`address=${encodeURIComponent(address)}&at=${encodeURIComponent(new Date(at).toISOString())}`)),
    pod: async (pod) => holdsIn(await get(`pod=${encodeURIComponent(`${pod.namespace}/${pod.name}`)}`)),
  };
}

const within = (t: number, [lo, hi]: readonly [number, number]): boolean => t >= lo && t <= hi;

/** What is wrong with `shown` as the holds of `address` against the log; [] when it matches exactly. */
export function holdMismatches(address: string, shown: readonly ShownHold[], want: readonly LoggedAttachment[]): string[] {
  const bad: string[] = [];
  const fmt = (r: readonly [number, number] | undefined): string => (r ? `[${r[0]}, ${r[1]}]` : 'still held');
  if (shown.length !== want.length) {
    bad.push(`${address}: ${shown.length} holds shown, ${want.length} happened (${want.map((w) => w.containerId).join(', ')})`);
    return bad;
  }
  for (let i = 0; i < want.length; i++) {
    const s = shown[i] as ShownHold;
    const w = want[i] as LoggedAttachment;
    const who = `${address} hold ${i} (${w.containerId})`;
    if (s.containerId !== w.containerId) bad.push(`${who}: shown for container ${s.containerId}`);
    if (s.pod?.namespace !== w.pod.namespace || s.pod?.name !== w.pod.name)
      bad.push(`${who}: shown for pod ${JSON.stringify(s.pod)}, was ${w.pod.namespace}/${w.pod.name}`);
    if (!s.from.exact || !within(s.from.at, w.from)) bad.push(`${who}: from ${s.from.at}${s.from.exact ? '' : ' (inexact)'}, ADD ran ${fmt(w.from)}`);
    if (w.until === undefined) {
      if (s.until !== undefined) bad.push(`${who}: shown until ${s.until.at} (${s.until.why}), still held`);
    } else if (s.until === undefined) {
      bad.push(`${who}: shown still held, released ${fmt(w.until)} (${w.why})`);
    } else {
      if (!s.until.exact || !within(s.until.at, w.until))
        bad.push(`${who}: until ${s.until.at}${s.until.exact ? '' : ' (inexact)'}, release ran ${fmt(w.until)}`);
      if (s.until.why !== w.why) bad.push(`${who}: released for ${s.until.why}, was ${w.why}`);
    }
  }
  return bad;
}

/** Runs `fns` at most `n` at a time (CLI processes: a few in parallel, not dozens). */
async function inParallel<T>(n: number, fns: readonly (() => Promise<T>)[]): Promise<T[]> {
  const out = new Array<T>(fns.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, fns.length) }, async () => {
      for (let i = next++; i < fns.length; i = next++) out[i] = await (fns[i] as () => Promise<T>)();
    }),
  );
  return out;
}

/** One pass over every address of the log: the holds shown, and what is wrong with them. */
async function compare(reader: HistoryReader, log: CallLog): Promise<{ shown: Map<string, ShownHold[]>; bad: string[] }> {
  const addresses = log.addresses();
  const all = await inParallel(
    4,
    addresses.map((a) => () => reader.holds(a)),
  );
  const shown = new Map(addresses.map((a, i) => [a, all[i] as ShownHold[]]));
  const bad = addresses.flatMap((a) => holdMismatches(a, shown.get(a) as ShownHold[], log.holdsOf(a)));
  return { shown, bad };
}

const dump = (shown: Map<string, ShownHold[]>): string => JSON.stringify([...shown].map(([a, h]) => [a, h.map((x) => x.raw)]));

/**
 * Polls `reader` for every address of the log until each shows exactly the log's holds (the
 * follower may lag), at most `ms`; fails with what is still wrong. Returns the holds shown.
 */
export async function untilHistoryMatches(reader: HistoryReader, log: CallLog, ms = 20_000): Promise<Map<string, ShownHold[]>> {
  const deadline = Date.now() + ms;
  for (;;) {
    const { shown, bad } = await compare(reader, log);
    if (bad.length === 0) return shown;
    if (Date.now() > deadline) assert.fail(`${reader.name} does not show what happened after ${ms} ms:\n${bad.join('\n')}\n${dump(shown)}`);
    await sleep(250);
  }
}

/** Once: `reader` shows exactly the log's holds for every address. */
export async function assertHistoryMatches(reader: HistoryReader, log: CallLog): Promise<Map<string, ShownHold[]>> {
  const { shown, bad } = await compare(reader, log);
  assert.deepEqual(bad, [], `${reader.name} does not show what happened:\n${bad.join('\n')}\n${dump(shown)}`);
  return shown;
}

/** `--at`: asserts the history knows the holder at `at`, and that it is `containerId` (undefined: nobody). */
export async function assertHolderAt(reader: HistoryReader, address: string, at: number, containerId: string | undefined, what: string): Promise<void> {
  const a = await reader.at(address, at);
  const when = `${address} at ${new Date(at).toISOString()}`;
  assert.ok(a.known, `${reader.name}, ${what}: ${when} is unknown: ${JSON.stringify(a.raw)}`);
  assert.equal(a.hold?.containerId, containerId, `${reader.name}, ${what}: ${when}: ${JSON.stringify(a.raw)}`);
}

/**
 * `--at` checks on the addresses of the log (`only`: these): inside each hold (between its ADD's
 * end and its release's start), between two holds, before the first (`before`: an instant after
 * history began and before the first ADD) and after the last (now).
 */
export async function assertAtInstants(
  reader: HistoryReader,
  log: CallLog,
  before: number,
  only?: readonly string[],
): Promise<{ inside: number; between: number; outside: number }> {
  const n = { inside: 0, between: 0, outside: 0 };
  const now = Date.now();
  const checks: (() => Promise<void>)[] = [];
  const check = (kind: keyof typeof n, address: string, at: number, containerId: string | undefined, what: string): void => {
    n[kind]++;
    checks.push(() => assertHolderAt(reader, address, at, containerId, what));
  };
  for (const address of only ?? log.addresses()) {
    const holds = log.holdsOf(address);
    const first = holds[0] as LoggedAttachment;
    assert.ok(before < first.from[0], `the "before" instant ${before} is not before the first ADD of ${address} (${first.from[0]})`);
    check('outside', address, before, undefined, 'before its first holder');
    for (let i = 0; i < holds.length; i++) {
      const h = holds[i] as LoggedAttachment;
      const inside = h.until ? Math.floor((h.from[1] + h.until[0]) / 2) : Math.max(h.from[1] + 1, now);
      assert.ok(
        inside > h.from[1] && (!h.until || inside < h.until[0]),
        `no instant certainly inside ${h.containerId}'s hold of ${address} (ADD ${h.from.join('-')}, release ${h.until?.join('-')})`,
      );
      check('inside', address, inside, h.containerId, 'inside a hold');
      const next = holds[i + 1];
      if (next && h.until) {
        const between = Math.floor((h.until[1] + next.from[0]) / 2);
        if (between > h.until[1] && between < next.from[0]) check('between', address, between, undefined, `between ${h.containerId} and ${next.containerId}`);
      }
    }
    const last = holds[holds.length - 1] as LoggedAttachment;
    if (last.until) check('outside', address, Math.max(now, last.until[1] + 1), undefined, 'after its last holder');
  }
  await inParallel(4, checks);
  return n;
}

/** `--pod NS/NAME`: asserts it lists exactly the pod's attachments' addresses. */
export async function assertPodHistory(reader: HistoryReader, log: CallLog, pod: PodName): Promise<void> {
  const shown = await reader.pod(pod);
  const want = log.ofPod(pod).flatMap((a) => a.addresses.map((address) => `${address} ${a.containerId}`));
  const got = shown.map((h) => `${h.address} ${h.containerId}`);
  assert.deepEqual(got.sort(), [...want].sort(), `${reader.name} --pod ${pod.namespace}/${pod.name}: ${JSON.stringify(shown.map((h) => h.raw))}`);
}

/**
 * Waits (bounded) until the history answers about the present: the file exists and an instant
 * just now is known (not in a gap, not before history began) — serve's follower is following.
 * Returns that instant: a "before" for assertAtInstants.
 */
export async function untilHistoryLive(db: string, probe = '192.0.2.1', ms = 20_000): Promise<number> {
  const deadline = Date.now() + ms;
  for (;;) {
    const now = Date.now();
    const r = await runCli(['ipam', 'history', probe, '--at', new Date(now).toISOString(), '--history-db', db, '-o', 'json']);
    if (r.code === AT_EXIT.none) return now;
    if (Date.now() > deadline) assert.fail(`the history at ${db} is not live after ${ms} ms (exit ${r.code}: ${r.stdout}${r.stderr})`);
    await sleep(200);
  }
}

/**
 * The whole check of a test's log: the API polled until it shows exactly the log's holds (the
 * follower may lag), then the CLI the same, once; `--at` inside, between and outside holds on
 * every address through the API and on the busiest address through the CLI; `--pod` for `pods`
 * on both. Returns the holds the CLI showed and the `--at` counts.
 */
export async function verifyHistory(
  db: string,
  serveUrl: string,
  log: CallLog,
  before: number,
  pods: readonly PodName[],
): Promise<{
  shown: Map<string, ShownHold[]>;
  api: { inside: number; between: number; outside: number };
  cli: { inside: number; between: number; outside: number };
}> {
  const viaApi = apiReader(serveUrl);
  const viaCli = cliReader(db);
  await untilHistoryMatches(viaApi, log);
  const shown = await assertHistoryMatches(viaCli, log);
  const api = await assertAtInstants(viaApi, log, before);
  const busiest = [...log.addresses()].sort((a, b) => log.holdsOf(b).length - log.holdsOf(a).length)[0] as string;
  const cli = await assertAtInstants(viaCli, log, before, [busiest]);
  for (const pod of pods) {
    await assertPodHistory(viaApi, log, pod);
    await assertPodHistory(viaCli, log, pod);
  }
  return { shown, api, cli };
}
