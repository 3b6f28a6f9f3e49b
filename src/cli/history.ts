/**
 * `podipam ipam history`: who held an address, and when, from the history `podipam serve` keeps
 * (its SQLite file, default the datastore's own — DATA_DIR/history.db for the default datastore,
 * DATA_DIR/history/NAME.db for the one --datastore names, see history-path.ts — opened read-only:
 * this command never writes it).
 *
 *   podipam ipam history ADDRESS [--since T] [--until T]   every holder, oldest first, and the gaps
 *   podipam ipam history ADDRESS --at T                    the one holder at T, none, or unknown
 *   podipam ipam history --pod NS/NAME [--since T] [--until T]   every address the pod ever had
 *   podipam ipam history [--since T] [--until T] -o jsonl  the export: one JSON object per line, in time order
 *
 * Times in: RFC 3339 with an offset, or relative (now, -30m, -2h, -7d). Times out: RFC 3339 in
 * UTC; a time known only within bounds prints as "between A and B". Exit codes with --at: 0 a
 * holder, 3 none, 4 unknown (the instant lies in a gap of the history: serve was away longer than
 * the datastore kept its changes, or the datastore was restored from a backup or replaced); 1 an
 * error (no history file), 2 bad input.
 */
import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import type { HistoryDb, HistoryRecord, TimeRange } from '../history/history-db.js';
import type { Hold } from '../model/history.js';
import { exactJson } from '../util/exact-json.js';
import { datastoreUrl, defaultDataDir } from './datastore-url.js';
import { printData, printTable, type Column } from './output.js';
import { parseIntFlag } from './parse-flag.js';
import { UsageError } from './usage-error.js';

/** Exit codes of `--at`. */
export const EXIT_NO_HOLDER = 3;
export const EXIT_UNKNOWN = 4;

const FORMATS = ['table', 'wide', 'json', 'yaml', 'jsonl'] as const;
type HistoryFormat = (typeof FORMATS)[number];

interface HistoryOpts {
  at?: string;
  since?: string;
  until?: string;
  pod?: string;
  limit?: string;
  historyDb?: string;
  output?: string;
  json?: boolean;
}

/** The history file: --history-db, else the datastore's own (history-path.ts: DATA_DIR/history.db for the default datastore). */
export async function historyFile(opts: { historyDb?: string }, cmd: Command): Promise<string> {
  if (opts.historyDb !== undefined) return opts.historyDb;
  const { defaultHistoryPath } = await import('./history-path.js');
  return usage(() => defaultHistoryPath(defaultDataDir(), datastoreUrl(cmd)));
}

function historyFormat(opts: HistoryOpts): HistoryFormat {
  const o = opts.output;
  if (o !== undefined && !(FORMATS as readonly string[]).includes(o))
    throw new UsageError(`invalid -o/--output ${JSON.stringify(o)}: expected ${FORMATS.join(', ')}`);
  if (opts.json && o !== undefined && o !== 'json') throw new UsageError(`--json and -o ${o} ask for different output: give one`);
  return opts.json ? 'json' : ((o as HistoryFormat | undefined) ?? 'table');
}

/** Opens the history read-only; a missing file is an error saying what makes one. */
async function openHistory(file: string): Promise<HistoryDb> {
  if (!existsSync(file)) throw new Error(`no history at ${file}: is podipam serve running with history on? (give its file with --history-db FILE)`);
  const { openHistoryDb } = await import('../history/sqlite-history-db.js');
  return openHistoryDb(file, { readonly: true });
}

/** Parses with `fn`, a TypeError/RangeError becoming a UsageError (exit 2). */
function usage<T>(fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    throw e instanceof TypeError || e instanceof RangeError ? new UsageError(e.message) : e;
  }
}

/** Writes lines to stdout, waiting for the pipe to drain (an export may be large). */
async function writeLines(lines: Iterable<string>): Promise<void> {
  let chunk = '';
  const flush = async (): Promise<void> => {
    if (chunk === '') return;
    const ok = process.stdout.write(chunk);
    chunk = '';
    if (!ok) await new Promise<void>((resolve) => process.stdout.once('drain', resolve));
  };
  for (const l of lines) {
    chunk += l + '\n';
    if (chunk.length > 64 * 1024) await flush();
  }
  await flush();
}

export function registerHistory(ipam: Command): void {
  ipam
    .command('history')
    .description('who held an address, and when (the history podipam serve keeps); with --pod, every address a pod had; without either, the export')
    .argument('[address]', 'an IPv4 or IPv6 address')
    .option(
      '--at <time>',
      'the one holder at this instant (exit 0: a holder, 3: none, 4: unknown: in a gap of the history, e.g. while serve was away or the datastore was restored from a backup)',
    )
    .option('--since <time>', 'holds overlapping, or records from, this time on (RFC 3339 or now, -30m, -2h, -7d)')
    .option('--until <time>', 'holds overlapping, or records up to, this time')
    .option('--pod <namespace/name>', 'instead of an address: every address this pod ever had (every incarnation)')
    .option('--limit <n>', 'the export: at most this many records')
    .option(
      '--history-db <file>',
      "serve's history file (default: the datastore's own, as serve chose it: DATA_DIR/history.db for the default datastore; opened read-only)",
    )
    .option('-o, --output <format>', `${FORMATS.join(', ')} (JSON: {"items": [hold…], "gaps": […]}; jsonl: one object per line)`)
    .option('--json', 'the same as -o json')
    .action(async (addressText: string | undefined, opts: HistoryOpts, cmd: Command) => {
      const format = historyFormat(opts);
      const { parseAddr, formatAddr } = await import('../ip/index.js');
      const { parseOptionalTime } = await import('../history/parse-time.js');
      const now = Date.now();
      const at = usage(() => parseOptionalTime('--at', opts.at, now));
      const since = usage(() => parseOptionalTime('--since', opts.since, now));
      const until = usage(() => parseOptionalTime('--until', opts.until, now));
      if (since !== undefined && until !== undefined && since > until)
        throw new UsageError(`--since ${JSON.stringify(opts.since)} is after --until ${JSON.stringify(opts.until)}`);
      if (addressText !== undefined && opts.pod !== undefined) throw new UsageError('give an ADDRESS or --pod, not both');
      if (at !== undefined && (since !== undefined || until !== undefined))
        throw new UsageError('--at asks about one instant: give it without --since/--until');
      if (at !== undefined && addressText === undefined) throw new UsageError('--at needs an ADDRESS (podipam ipam history ADDRESS --at TIME)');
      if (opts.limit !== undefined && (addressText !== undefined || opts.pod !== undefined))
        throw new UsageError('--limit bounds the export (no ADDRESS, no --pod)');
      const limit = opts.limit === undefined ? undefined : parseIntFlag('--limit', opts.limit, { min: 1 });
      const address = addressText === undefined ? undefined : usage(() => formatAddr(parseAddr(addressText)));
      const pod = opts.pod === undefined ? undefined : await import('../model/pod-ref.js').then((m) => usage(() => m.parsePodRef('--pod', opts.pod as string)));
      const range: TimeRange = { ...(since !== undefined ? { since } : {}), ...(until !== undefined ? { until } : {}) };

      const db = await openHistory(await historyFile(opts, cmd));
      try {
        if (address !== undefined && at !== undefined) return await printAt(db, address, at, format);
        if (address !== undefined)
          return await printHolds(
            format,
            db.holdsOfAddress(address, range),
            db.gaps(range),
            `no holder of ${address} in the history${rangeText(range)}`,
            false,
          );
        if (pod !== undefined)
          return await printHolds(
            format,
            db.holdsOfPod(pod.namespace, pod.name, range),
            db.gaps(range),
            `pod ${pod.namespace}/${pod.name} held no address in the history${rangeText(range)}`,
            true,
          );
        return await printExport(db, format, since ?? 0, until, limit);
      } finally {
        db.close();
      }
    });
}

function rangeText(r: TimeRange): string {
  return `${r.since !== undefined ? ` since ${new Date(r.since).toISOString()}` : ''}${r.until !== undefined ? ` until ${new Date(r.until).toISOString()}` : ''}`;
}

async function printAt(db: HistoryDb, address: string, at: number, format: HistoryFormat): Promise<void> {
  const { holderAtJson, holdSentence } = await import('../history/format-history.js');
  const { formatTime } = await import('../history/parse-time.js');
  const r = db.holderAt(address, at);
  if (!r.known) process.exitCode = EXIT_UNKNOWN;
  else if (!r.hold) process.exitCode = EXIT_NO_HOLDER;
  const json = holderAtJson(address, at, r);
  if (format === 'jsonl') return writeLines([exactJson(json)]);
  if (printData(format, json)) return;
  const head = `${address} at ${formatTime(at)}`;
  if (!r.known) process.stdout.write(`${head}: unknown (between ${formatTime(r.gap.from)} and ${formatTime(r.gap.until)}: ${r.gap.cause})\n`);
  else if (!r.hold) process.stdout.write(`${head}: none (no pod held it)\n`);
  else process.stdout.write(`${head}: ${holdSentence(r.hold)}\n`);
}

async function printHolds(
  format: HistoryFormat,
  holds: readonly Hold[],
  gaps: readonly import('../model/history.js').HistoryGap[],
  empty: string,
  byPod: boolean,
): Promise<void> {
  const { holdJson, gapJson, gapSentence, podText, timeText, evidenceText } = await import('../history/format-history.js');
  if (format === 'jsonl') return writeLines(holds.map((h) => exactJson(holdJson(h))));
  if (printData(format, { items: holds.map(holdJson), gaps: gaps.map(gapJson) })) return;
  const wide = format === 'wide';
  if (holds.length === 0) process.stdout.write(`${empty}\n`);
  else {
    const cols: Column<Hold>[] = [
      ...(byPod ? [{ header: 'ADDRESS', value: (h: Hold) => h.address }] : []),
      { header: 'FROM', value: (h) => timeText(h.from) },
      { header: 'UNTIL', value: (h) => (h.until ? timeText(h.until) : 'still held') },
      { header: 'WHY', value: (h) => (h.until?.evidence ? `${h.until.why} (${evidenceText(h.until.evidence)})` : h.until?.why) },
      { header: 'POD', value: (h) => podText(h) },
      { header: 'UID', value: (h) => h.pod?.uid },
      { header: 'CONTAINER', value: (h) => (wide ? h.containerId : h.containerId?.slice(0, 12)) },
      { header: 'IFNAME', value: (h) => h.ifname },
      { header: 'NETWORK', value: (h) => h.network },
      { header: 'NODE', value: (h) => h.node },
      { header: 'POOL', value: (h) => h.pool },
      ...(wide
        ? [
            { header: 'BLOCK', value: (h: Hold) => h.block },
            { header: 'HANDLE', value: (h: Hold) => h.handle },
          ]
        : []),
    ];
    printTable(holds, cols);
  }
  for (const g of gaps) process.stdout.write(`${gapSentence(g)} (who held an address inside it is unknown)\n`);
}

async function printExport(db: HistoryDb, format: HistoryFormat, since: number, until: number | undefined, limit: number | undefined): Promise<void> {
  const { recordJson, recordTime, timeText, evidenceText } = await import('../history/format-history.js');
  const { formatTime } = await import('../history/parse-time.js');
  function* records(): Iterable<HistoryRecord> {
    for (const r of db.records(since, limit)) {
      if (until !== undefined && recordTime(r) > until) return;
      yield r;
    }
  }
  if (format === 'jsonl')
    return writeLines(
      (function* () {
        for (const r of records()) yield exactJson(recordJson(r));
      })(),
    );
  const all = [...records()];
  if (printData(format, { items: all.map(recordJson) })) return;
  const wide = format === 'wide';
  printTable(all, [
    {
      header: 'TIME',
      value: (r) => (r.event === 'gap' ? formatTime(r.until) : timeText(r.earliest === undefined ? { at: r.at } : { at: r.at, earliest: r.earliest })),
    },
    { header: 'EVENT', value: (r) => r.event },
    { header: 'ADDRESS', value: (r) => (r.event === 'gap' ? undefined : r.address) },
    { header: 'POD', value: (r) => (r.event === 'gap' || !r.pod ? undefined : `${r.pod.namespace}/${r.pod.name}`) },
    { header: 'NODE', value: (r) => (r.event === 'gap' ? undefined : r.node) },
    {
      header: 'WHY',
      value: (r) =>
        r.event === 'released'
          ? r.evidence
            ? `${r.why} (${evidenceText(r.evidence)})`
            : r.why
          : r.event === 'gap'
            ? `from ${formatTime(r.from)}: ${r.cause}`
            : undefined,
    },
    ...(wide
      ? [
          { header: 'UID', value: (r: HistoryRecord) => (r.event === 'gap' ? undefined : r.pod?.uid) },
          { header: 'CONTAINER', value: (r: HistoryRecord) => (r.event === 'gap' ? undefined : r.containerId) },
          { header: 'HANDLE', value: (r: HistoryRecord) => (r.event === 'gap' ? undefined : r.handle) },
        ]
      : []),
  ]);
}
