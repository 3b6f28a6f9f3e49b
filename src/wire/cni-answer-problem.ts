/**
 * What bin/podipam and the native shim accept from an agent before printing it: the agent's
 * answer becomes the runtime's CNI result, so anything that is not one is refused (code 11,
 * never printed). The rule, the same in native/shim/podipam-cni.c (valid_answer):
 * - exit status 0 to ADD: one JSON object with a string `cniVersion` (a result);
 * - exit status 0 to any other verb: nothing (DEL, CHECK, GC and STATUS print no result);
 * - any other exit status: one JSON object with a numeric `code` (a CNI error).
 * Keys match case-insensitively, as Go's encoding/json (and so the runtime) reads them.
 */
import { goField, isObject } from '../cni/go-decode.js';

/** Why the answer is not a CNI answer to `verb`, or undefined when it is one. */
export function cniAnswerProblem(verb: string | undefined, status: number, body: string): string | undefined {
  const bytes = Buffer.byteLength(body);
  if (status === 0 && verb !== 'ADD') {
    return body.trim() === '' ? undefined : `${bytes} bytes to ${verb ?? 'a call'}, which prints nothing: not a CNI result`;
  }
  let v: unknown;
  try {
    v = JSON.parse(body);
  } catch {
    v = undefined;
  }
  if (status === 0) {
    return isObject(v) && typeof goField(v, 'cniVersion') === 'string'
      ? undefined
      : `${bytes} bytes that are not a CNI result (a JSON object naming its cniVersion)`;
  }
  return isObject(v) && typeof goField(v, 'code') === 'number'
    ? undefined
    : `exit status ${status} with ${bytes} bytes that are not a CNI error (a JSON object with a numeric code)`;
}
