/**
 * Printing for CLI commands: aligned human tables by default, `-o wide` with every column,
 * JSON with `--json` / `-o json`, YAML with `-o yaml`. Generic —
 * any command group can use it. JSON turns bigint into a number when it is exactly
 * representable (≤ 2^53 − 1) and into a decimal string beyond (IPv6 pool sizes), so
 * consumers always get exact values.
 */

import type { Command } from 'commander';
import { powerText } from '../util/count-text.js';
import { exactJson } from '../util/exact-json.js';
import { yamlText } from '../util/yaml-text.js';
import { escapeControls } from '../util/quote-text.js';
import { UsageError } from './usage-error.js';

export type Cell = string | number | bigint | boolean | null | undefined;

export interface Column<T> {
  readonly header: string;
  readonly value: (row: T) => Cell;
  /** Numbers default to right alignment, everything else to left. */
  readonly align?: 'left' | 'right';
}

/** Big counts print as powerText says (2^N, M*2^N: the dashboard's rule too); control characters as `\uXXXX`, so a column stays a column. */
function cellText(v: Cell): string {
  if (v === null || v === undefined) return '-';
  return (typeof v === 'bigint' ? powerText(v) : undefined) ?? escapeControls(String(v));
}

/**
 * Formats rows as a table: a header line, then one line per row, columns separated by two
 * spaces, no trailing spaces. A bigint that is a power of two of 2^32 or more prints as "2^N".
 * An empty `rows` gives just the header.
 */
export function formatTable<T>(rows: readonly T[], columns: readonly Column<T>[]): string {
  const cells = rows.map((r) => columns.map((c) => c.value(r)));
  const texts = [columns.map((c) => c.header), ...cells.map((r) => r.map(cellText))];
  const right = columns.map(
    (c, i) => c.align === 'right' || (c.align === undefined && cells.length > 0 && cells.every((r) => typeof r[i] === 'number' || typeof r[i] === 'bigint')),
  );
  const widths = columns.map((_, i) => Math.max(...texts.map((t) => t[i]!.length)));
  return (
    texts
      .map((t) =>
        t
          .map((s, i) => (right[i] ? s.padStart(widths[i]!) : i === t.length - 1 ? s : s.padEnd(widths[i]!)))
          .join('  ')
          .trimEnd(),
      )
      .join('\n') + '\n'
  );
}

/** JSON text (2-space indent, trailing newline) with bigint handled as described above. */
export function formatJson(value: unknown): string {
  return exactJson(value, 2) + '\n';
}

/** Writes `formatJson(value)` to stdout. */
export function printJson(value: unknown): void {
  process.stdout.write(formatJson(value));
}

/** Writes `formatTable(rows, columns)` to stdout. */
export function printTable<T>(rows: readonly T[], columns: readonly Column<T>[]): void {
  process.stdout.write(formatTable(rows, columns));
}

/** What `-o` / `--json` ask for: a table (`wide`: with every column), JSON or YAML. */
export type OutputFormat = 'table' | 'wide' | 'json' | 'yaml';

/** The values `-o, --output` takes (kubectl's names). */
export const OUTPUT_FORMATS = ['json', 'yaml', 'wide'] as const;

/** Adds `-o, --output json|yaml|wide` and `--json` (the same as `-o json`) to a command. */
export function withOutputOptions(cmd: Command, jsonShape: string): Command {
  return cmd.option('-o, --output <format>', `${OUTPUT_FORMATS.join(', ')} (JSON and YAML: ${jsonShape})`).option('--json', 'the same as -o json');
}

/** The format the flags ask for; UsageError naming -o and its value. */
export function outputFormat(opts: { readonly output?: string; readonly json?: boolean }): OutputFormat {
  const o = opts.output;
  if (o !== undefined && !(OUTPUT_FORMATS as readonly string[]).includes(o)) {
    throw new UsageError(`invalid -o/--output ${JSON.stringify(o)}: expected ${OUTPUT_FORMATS.join(', ')}`);
  }
  if (opts.json && o !== undefined && o !== 'json') throw new UsageError(`--json and -o ${o} ask for different output: give one`);
  return opts.json ? 'json' : ((o as OutputFormat | undefined) ?? 'table');
}

/**
 * Prints `data` as JSON or YAML when the format asks for it (true), else returns false and
 * the command prints its table. Lists are `{"items": […]}`, as the API answers.
 */
export function printData(format: OutputFormat, data: unknown): boolean {
  if (format === 'json') printJson(data);
  else if (format === 'yaml') process.stdout.write(yamlText(data));
  else return false;
  return true;
}
