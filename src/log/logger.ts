/**
 * The one structured logger of the long-running processes (serve, controller, agent): pino,
 * one line per event on stderr, each with time (ISO 8601), level, component and the ids it
 * concerns (node, pool, handle). `json` is pino's own line; `text` is the same record made
 * readable for a terminal or journald ("2026-12-01T07:00:00.000Z INFO  controller assigned
 * node=a podCIDRs=…"). The per-pod plugin does not use this (see src/plugin/failure-log.ts).
 * No line carries a raw control character, whatever a logged value holds (a pod name, an
 * annotation): pino's JSON escapes C0; DEL, C1 (U+0080–U+009F) and U+2028/2029 are escaped
 * as `\uXXXX` here, and the text form quotes any value containing one.
 */
import { pino, type DestinationStream, type Logger, type LevelWithSilent } from 'pino';

export type { Logger } from 'pino';
export type LogLevel = LevelWithSilent;
export type LogFormat = 'text' | 'json';

export const LOG_LEVELS: readonly LogLevel[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];
export const LOG_FORMATS: readonly LogFormat[] = ['text', 'json'];

/** The ids a line may concern; any other field is printed too. */
export interface LogFields {
  readonly node?: string;
  readonly pool?: string;
  readonly handle?: string;
  readonly [k: string]: unknown;
}

export interface LoggerOptions {
  readonly level: LogLevel;
  readonly format: LogFormat;
  readonly component: string;
  /** Where lines go (default: stderr, written synchronously so nothing is lost at exit). */
  readonly destination?: { write(line: string): unknown };
}

/** Checks --log-level / --log-format text; throws TypeError naming the flag and value. */
export function parseLogOptions(level: string, format: string): { level: LogLevel; format: LogFormat } {
  if (!(LOG_LEVELS as readonly string[]).includes(level))
    throw new TypeError(`invalid --log-level ${JSON.stringify(level)}: expected one of ${LOG_LEVELS.join(', ')}`);
  if (!(LOG_FORMATS as readonly string[]).includes(format)) throw new TypeError(`invalid --log-format ${JSON.stringify(format)}: expected text or json`);
  return { level: level as LogLevel, format: format as LogFormat };
}

export function createLogger(o: LoggerOptions): Logger {
  const out = o.destination ?? pino.destination({ fd: 2, sync: true });
  const stream: DestinationStream = { write: (line: string) => void out.write(o.format === 'json' ? escapeRest(line) : textLine(line)) };
  return pino(
    {
      level: o.level,
      base: { component: o.component },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    stream,
  );
}

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;
const REST = /[\u007f-\u009f\u2028\u2029]/g;

/** A JSON line with the control characters JSON.stringify leaves raw escaped (they occur only inside strings, where `\uXXXX` means the same). */
function escapeRest(json: string): string {
  return json.replace(REST, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** `s` quoted as JSON (control characters escaped) when it holds one, else `s`. */
function safe(s: string): string {
  return CONTROL.test(s) ? escapeRest(JSON.stringify(s)) : s;
}

const FIRST = ['time', 'level', 'component', 'msg'];

/** One pino JSON line as text: time, level, component, message, then key=value (ids first). */
export function textLine(json: string): string {
  let r: Record<string, unknown>;
  try {
    r = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json;
  }
  const ids = ['node', 'pool', 'handle'].filter((k) => r[k] !== undefined);
  const rest = Object.keys(r).filter((k) => !FIRST.includes(k) && !ids.includes(k));
  const kv = [...ids, ...rest].map((k) => `${k}=${fmt(r[k])}`);
  const head = `${String(r.time)} ${String(r.level).toUpperCase().padEnd(5)} ${String(r.component)}`;
  return `${[head, r.msg === undefined ? '' : safe(String(r.msg)), ...kv].filter((s) => s !== '').join(' ')}\n`;
}

function fmt(v: unknown): string {
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  return /^[^\s"=]*$/.test(s) && !CONTROL.test(s) ? s : escapeRest(JSON.stringify(s));
}

/**
 * What every service and daemon logs through: pino's own calling convention (fields first,
 * then the message), with child loggers for a component or an id that every line of a scope
 * carries. A pino Logger is one; `recordingLog` (tests) and `silentLog` are others. No level is
 * guessed and no id is parsed out of a message: the caller names both.
 */
export interface Log {
  debug(fields: LogFields, msg: string): void;
  info(fields: LogFields, msg: string): void;
  warn(fields: LogFields, msg: string): void;
  error(fields: LogFields, msg: string): void;
  child(bindings: LogFields): Log;
}

export type LogRecordLevel = 'debug' | 'info' | 'warn' | 'error';

/** One line a recordingLog kept: its level, message and fields (the child bindings merged in). */
export interface LogRecord {
  readonly level: LogRecordLevel;
  readonly msg: string;
  readonly fields: LogFields;
}

/** A Log that discards every line. */
export const silentLog: Log = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
  child: () => silentLog,
};

/** A Log that keeps every line in `records` (shared with its children): for tests. */
export function recordingLog(records: LogRecord[] = [], bindings: LogFields = {}): Log & { readonly records: LogRecord[] } {
  const at =
    (level: LogRecordLevel) =>
    (fields: LogFields, msg: string): void => {
      records.push({ level, msg, fields: { ...bindings, ...fields } });
    };
  return {
    records,
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    child: (b) => recordingLog(records, { ...bindings, ...b }),
  };
}
