/**
 * Printing for CLI commands: aligned human tables by default, JSON with `--json`. Generic —
 * any command group can use it. JSON turns bigint into a number when it is exactly
 * representable (≤ 2^53 − 1) and into a decimal string beyond (IPv6 pool sizes), so
 * consumers always get exact values.
 */

export type Cell = string | number | bigint | boolean | null | undefined;

export interface Column<T> {
  readonly header: string;
  readonly value: (row: T) => Cell;
  /** Numbers default to right alignment, everything else to left. */
  readonly align?: 'left' | 'right';
}

function cellText(v: Cell): string {
  if (v === null || v === undefined) return '-';
  return String(v);
}

/**
 * Formats rows as a table: a header line, then one line per row, columns separated by two
 * spaces, no trailing spaces. An empty `rows` gives just the header.
 */
export function formatTable<T>(rows: readonly T[], columns: readonly Column<T>[]): string {
  const cells = rows.map((r) => columns.map((c) => c.value(r)));
  const texts = [columns.map((c) => c.header), ...cells.map((r) => r.map(cellText))];
  const right = columns.map((c, i) => c.align === 'right' || (c.align === undefined && cells.length > 0 && cells.every((r) => typeof r[i] === 'number' || typeof r[i] === 'bigint')));
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
  return (
    JSON.stringify(
      value,
      (_k, v: unknown) => (typeof v === 'bigint' ? (v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= -BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v.toString()) : v),
      2,
    ) + '\n'
  );
}

/** Writes `formatJson(value)` to stdout. */
export function printJson(value: unknown): void {
  process.stdout.write(formatJson(value));
}

/** Writes `formatTable(rows, columns)` to stdout. */
export function printTable<T>(rows: readonly T[], columns: readonly Column<T>[]): void {
  process.stdout.write(formatTable(rows, columns));
}
