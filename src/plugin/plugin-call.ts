/**
 * One plugin call as a value: environment + stdin in, a typed answer out (src/wire/call-answer.ts)
 * — what the per-pod process prints and exits with, and what the node agent sends back to the
 * shim. Never throws: anything thrown becomes the CNI error JSON (Go's indented format) with exit
 * status 1 and its code as a number; the back end is the one the selection chose.
 */
import { dispatch } from './dispatch.js';
import { cniErrorOf } from '../cni/cni-error-of.js';
import type { BackendHost, BackendKind } from './ipam-backend.js';
import { goMarshalIndent } from '../cni/go-json.js';
import { versionAnswer } from '../cni/version.js';
import type { CallAnswer } from '../wire/call-answer.js';

export type { CallAnswer };

export async function pluginCall(env: NodeJS.ProcessEnv, stdin: () => string, host?: BackendHost): Promise<CallAnswer> {
  if (env.CNI_COMMAND === 'VERSION') return { status: 0, output: versionAnswer() };
  const chosen: { backend?: BackendKind } = {};
  try {
    const output = await dispatch(env, stdin, host, chosen);
    return chosen.backend ? { status: 0, output, backend: chosen.backend } : { status: 0, output };
  } catch (e) {
    const { code, output } = failure(e);
    return chosen.backend ? { status: 1, code, output, backend: chosen.backend } : { status: 1, code, output };
  }
}

/** The error JSON for anything thrown; a fallback if even that fails. */
export function errorJson(e: unknown): string {
  return failure(e).output;
}

/** The CNI code and error JSON of anything thrown (code 999 if even the conversion fails). */
function failure(e: unknown): { code: number; output: string } {
  try {
    const err = cniErrorOf(e);
    return { code: err.code, output: goMarshalIndent(err.toJSON() as Record<string, string | number>) };
  } catch {
    return { code: 999, output: JSON.stringify({ code: 999, msg: e instanceof Error ? e.message : String(e) }, null, 4) };
  }
}
