/**
 * One plugin call as a value: environment + stdin in, `{status, out}` out — what the per-pod
 * process prints and exits with, and what the node agent sends back to the shim. Never throws:
 * anything thrown becomes the CNI error JSON (Go's indented format) with exit status 1.
 */
import { dispatch } from './dispatch.js';
import { cniErrorOf } from '../cni/cni-error-of.js';
import type { BackendHost } from './ipam-backend.js';
import { goMarshalIndent } from '../cni/go-json.js';
import { versionAnswer } from '../cni/version.js';

export interface PluginAnswer {
  /** The exit status: 0, or 1 with the error JSON in `out`. */
  readonly status: number;
  /** What goes to stdout. */
  readonly out: string;
}

export async function pluginCall(env: NodeJS.ProcessEnv, stdin: () => string, host?: BackendHost): Promise<PluginAnswer> {
  if (env.CNI_COMMAND === 'VERSION') return { status: 0, out: versionAnswer() };
  try {
    return { status: 0, out: await dispatch(env, stdin, host) };
  } catch (e) {
    return { status: 1, out: errorJson(e) };
  }
}

/** The error JSON for anything thrown; a fallback if even that fails. */
export function errorJson(e: unknown): string {
  try {
    return goMarshalIndent(cniErrorOf(e).toJSON() as Record<string, string | number>);
  } catch {
    return JSON.stringify({ code: 999, msg: e instanceof Error ? e.message : String(e) }, null, 4);
  }
}
