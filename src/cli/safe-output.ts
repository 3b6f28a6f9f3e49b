/**
 * What the CLI prints is never a channel for control characters: a pod name, annotation value
 * or handle attribute that came from outside (an import, an old record, a runtime) could
 * otherwise move a terminal's cursor, retitle its window or hide lines. `guardOutput` makes a
 * stream escape every control character but newline and tab in each string written to it, as
 * `\uXXXX` (src/util/quote-text.ts): JSON and YAML stay valid (they may only occur inside
 * strings, where the escape means the same), tables and sentences stay readable. Buffers pass
 * as they are (no command writes one to a terminal).
 */
import { escapeOutput } from '../util/quote-text.js';

const GUARDED = Symbol('podipam.guardedOutput');

/** Wraps `stream.write` once (a second call changes nothing). */
export function guardOutput(stream: NodeJS.WritableStream): void {
  const s = stream as NodeJS.WritableStream & { [GUARDED]?: true };
  if (s[GUARDED]) return;
  const write = s.write.bind(s) as (chunk: unknown, ...rest: unknown[]) => boolean;
  s.write = (chunk: unknown, ...rest: unknown[]) => write(typeof chunk === 'string' ? escapeOutput(chunk) : chunk, ...rest);
  s[GUARDED] = true;
}
