/**
 * A Log (src/log/logger.ts) that appends each line, as text, to a plain array the test reads
 * at any time: the message, then its fields as key=value (child bindings first) when `fields`
 * is true. For tests written against lines of text; recordingLog keeps the records themselves.
 */
import type { Log, LogFields } from '../../src/log/logger.js';

export function linesLog(lines: string[], options: { fields?: boolean } = {}, bindings: LogFields = {}): Log {
  const at = (fields: LogFields, msg: string): void => {
    const all = { ...bindings, ...fields };
    lines.push(options.fields ? [msg, ...Object.entries(all).map(([k, v]) => `${k}=${String(v)}`)].join(' ') : msg);
  };
  return { debug: at, info: at, warn: at, error: at, child: (b) => linesLog(lines, options, { ...bindings, ...b }) };
}
