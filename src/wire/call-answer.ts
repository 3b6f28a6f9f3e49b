/**
 * One CNI call's answer as a value: what the per-pod process prints and exits with, what the
 * node agent sends back over its socket (frame.ts carries `status` and `output`), and what the
 * agent counts (`code`, `backend`) without reading `output` again.
 */
export interface CallAnswer {
  /** The exit status: 0, or 1 with the CNI error JSON in `output`. */
  readonly status: number;
  /** The CNI error code, when the call failed (the `code` of the JSON in `output`). */
  readonly code?: number;
  /** What goes to stdout: the result, nothing, or the CNI error JSON. */
  readonly output: string;
  /**
   * The back end that served the call, as the plugin's selection chose it from the parsed
   * config ("local", "usePodCidr", "cluster", "warm"); absent when the call failed before it.
   */
  readonly backend?: string;
}

/** One CNI call: its environment and its stdin (read on demand) → its answer. Never throws. */
export type CallHandler = (env: NodeJS.ProcessEnv, stdin: () => string) => Promise<CallAnswer>;
