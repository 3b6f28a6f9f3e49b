/** A Log (src/log/logger.ts) that hands each line to `push` as `msg {fields}`: for tests that look for words in what was logged. */
import type { Log, LogFields } from '../../src/log/logger.js';

export function lineLog(push: (line: string) => void, bindings: LogFields = {}): Log {
  const at = (fields: LogFields, msg: string): void => push(`${msg} ${JSON.stringify({ ...bindings, ...fields })}`);
  return { debug: at, info: at, warn: at, error: at, child: (b) => lineLog(push, { ...bindings, ...b }) };
}
