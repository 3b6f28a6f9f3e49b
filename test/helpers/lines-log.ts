/**
 * A Log (src/log/logger.ts) that appends each line, as text, to a plain array the test reads
 * at any time: "component: " first when `component` is set and a child logger named one, then
 * the message, then the fields as key=value (`fields`: all of them, or the ones named).
 * For tests written against lines of text; recordingLog keeps the records themselves.
 */
import type { Log, LogFields } from '../../src/log/logger.js';

export interface LinesLogOptions {
  readonly fields?: boolean | readonly string[];
  readonly component?: boolean;
}

export function linesLog(lines: string[], options: LinesLogOptions = {}, bindings: LogFields = {}): Log {
  const at = (fields: LogFields, msg: string): void => {
    const { component, ...all } = { ...bindings, ...fields };
    const f = options.fields;
    const kv = f === undefined || f === false ? [] : Object.entries(all).filter(([k]) => f === true || f.includes(k));
    const head = options.component && component !== undefined ? `${String(component)}: ${msg}` : msg;
    lines.push([head, ...kv.map(([k, v]) => `${k}=${String(v)}`)].join(' '));
  };
  return { debug: at, info: at, warn: at, error: at, child: (b) => linesLog(lines, options, { ...bindings, ...b }) };
}
