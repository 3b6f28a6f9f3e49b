/**
 * The functions V8 left deoptimised when an agent's warm-up ended (pure: V8's trace text in, names
 * out). With V8 optimising during the warm-up only (`podipam agent --optimize warm-up`), a function
 * whose last event before the agent listened was a deoptimisation — a bailout, or its code marked
 * for deoptimisation when an assumption it was built on broke — runs in V8's baseline tiers for
 * the agent's life. Read from `--trace-opt --trace-deopt` output (line-buffered) up to the agent's
 * readiness: each function (by its SharedFunctionInfo) ends either optimised ("completed
 * optimizing") or not.
 */

export interface LeftDeoptimised {
  /** The function's name as V8 prints it ("(anonymous)" for none). */
  readonly name: string;
  /** Why: the bailout's reason, or "code dependencies" for a marked function. */
  readonly reason: string;
}

// V8 prints `<JSFunction NAME (sfi = 0x…)>`, and `<JSFunction (sfi = 0x…)>` for an anonymous one; a name may hold spaces (`get x`).
const OPTIMISED = /^\[completed optimizing 0x[0-9a-f]+ <JSFunction (?:([^(]*?) )?\(sfi = (0x[0-9a-f]+)\)/;
const BAILOUT = /^\[bailout \(kind: [^,]+, reason: ([^)]*)\): begin\. deoptimizing 0x[0-9a-f]+ <JSFunction (?:([^(]*?) )?\(sfi = (0x[0-9a-f]+)\)/;
const MARKED = /^\[marking dependent code 0x[0-9a-f]+ <Code \w+> \((0x[0-9a-f]+) <SharedFunctionInfo ?([^>]*)>\).*reason: ([^\]]*)\]/;

/** The functions of `trace` whose last event was a deoptimisation, in the order of those events. */
export function leftDeoptimised(trace: string): LeftDeoptimised[] {
  const last = new Map<string, LeftDeoptimised | undefined>();
  for (const line of trace.split('\n')) {
    let m = OPTIMISED.exec(line);
    if (m) {
      last.delete(m[2]!);
      last.set(m[2]!, undefined);
      continue;
    }
    m = BAILOUT.exec(line);
    if (m) {
      last.delete(m[3]!);
      last.set(m[3]!, { name: m[2] || '(anonymous)', reason: m[1]! });
      continue;
    }
    m = MARKED.exec(line);
    if (m) {
      last.delete(m[1]!);
      last.set(m[1]!, { name: m[2] || '(anonymous)', reason: m[3]! });
    }
  }
  return [...last.values()].filter((v): v is LeftDeoptimised => v !== undefined);
}
