/**
 * Bounded, replayable fuzz runs with fast-check. Every run prints its seed (as a test
 * diagnostic and on stdout); a failure prints the command that replays it:
 *   PODIPAM_FUZZ_SEED=<seed> PODIPAM_FUZZ_PATH=<path> node scripts/test.mjs <file>
 * PODIPAM_FUZZ_RUNS multiplies every run's case count (default 1; e.g. 20 for a long session).
 */
import fc from 'fast-check';
import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';

export { fc };

export interface FuzzOptions {
  /** Cases at the default size. */
  readonly runs: number;
  /** The file filter for the replay line (`node scripts/test.mjs <file>`). */
  readonly file: string;
}

function seedOf(): number {
  const s = process.env.PODIPAM_FUZZ_SEED;
  return s === undefined || s === '' ? (Date.now() ^ Math.floor(Math.random() * 2 ** 31)) | 0 : Number(s);
}

/** Number of cases: `runs` × PODIPAM_FUZZ_RUNS (default 1). */
export function fuzzRuns(runs: number): number {
  const k = Number(process.env.PODIPAM_FUZZ_RUNS ?? 1);
  return Math.max(1, Math.round(runs * (Number.isFinite(k) && k > 0 ? k : 1)));
}

/** Runs `property` on `runs` cases of `arb` with a printed seed; throws with the replay line on a failure. */
export async function fuzz<T>(t: TestContext, o: FuzzOptions, arb: fc.Arbitrary<T>, property: (v: T) => Promise<void> | void): Promise<void> {
  const seed = seedOf();
  const path = process.env.PODIPAM_FUZZ_PATH || undefined;
  const numRuns = fuzzRuns(o.runs);
  t.diagnostic(`fast-check seed ${seed}, ${numRuns} cases`);
  console.log(`fuzz ${t.name}: seed ${seed}, ${numRuns} cases`);
  const details = await fc.check(
    fc.asyncProperty(arb, async (v) => {
      await property(v);
    }),
    { numRuns, seed, ...(path === undefined ? {} : { path, endOnFailure: true }) },
  );
  if (details.failed) {
    const cause = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
    throw new Error(
      `fuzz failed after ${details.numRuns} case(s): ${cause}\n` +
        `counterexample: ${fc.stringify(details.counterexample)}\n` +
        `Replay: PODIPAM_FUZZ_SEED=${details.seed} PODIPAM_FUZZ_PATH=${details.counterexamplePath} node scripts/test.mjs ${o.file}`,
    );
  }
}

/** Arbitrary text, including control characters, lone surrogates and NULs. */
export const anyText = (maxLength = 64): fc.Arbitrary<string> =>
  fc.oneof(fc.string({ maxLength }), fc.fullUnicodeString({ maxLength }), fc.string16bits({ maxLength }), fc.asciiString({ maxLength }));

/** Arbitrary JSON values, nested a few levels. */
export const anyJson = (): fc.Arbitrary<unknown> => fc.jsonValue({ maxDepth: 4 });

/** Any JSON value, or a number/string/boolean edge case a decoder might mishandle. */
export const oddValue = (): fc.Arbitrary<unknown> =>
  fc.oneof(
    anyJson(),
    fc.constantFrom(
      null,
      true,
      false,
      0,
      -1,
      1.5,
      1e308,
      -0,
      '',
      ' ',
      '0',
      'null',
      '10.0.0.0/8',
      '::/0',
      '1.2.3.4',
      'fd00::1',
      '../etc',
      '/',
      '\0',
      '💥',
      [],
      {},
      [[]],
      [{}],
    ),
    fc.integer(),
    fc.double({ noNaN: true }),
    anyText(),
  );

/** Random bytes, mostly small. */
export const anyBytes = (maxLength = 256): fc.Arbitrary<Buffer> => fc.uint8Array({ maxLength }).map((a) => Buffer.from(a));

/** Replaces, deletes or adds one field somewhere in a JSON object tree; returns the new tree and the field's name. */
export function mutateAt(root: unknown, path: readonly (string | number)[], change: { kind: 'set'; value: unknown } | { kind: 'delete' }): unknown {
  const clone = structuredClone(root) as Record<string | number, unknown>;
  let node: Record<string | number, unknown> = clone;
  for (const k of path.slice(0, -1)) {
    const next = node[k];
    if (next === null || typeof next !== 'object') return clone;
    node = next as Record<string | number, unknown>;
  }
  const last = path[path.length - 1]!;
  if (change.kind === 'delete') {
    if (Array.isArray(node) && typeof last === 'number') node.splice(last, 1);
    else delete node[last];
  } else node[last] = change.value;
  return clone;
}

/** Every path to a field or element of a JSON tree (objects and arrays, depth first). */
export function pathsOf(v: unknown, prefix: readonly (string | number)[] = []): (string | number)[][] {
  const out: (string | number)[][] = [];
  if (Array.isArray(v)) v.forEach((x, i) => out.push([...prefix, i], ...pathsOf(x, [...prefix, i])));
  else if (v !== null && typeof v === 'object') for (const [k, x] of Object.entries(v)) out.push([...prefix, k], ...pathsOf(x, [...prefix, k]));
  return out;
}

/** Rejects when `p` takes longer than `ms` (a hang is a failure, not a stuck run). */
export async function bounded<T>(what: string, ms: number, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms (a hang)`)), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

const KNOWN_CODES = new Set([1, 2, 3, 4, 5, 6, 7, 11, 50, 51, 100, 101, 102]);

/** A plugin answer ({status, out}) is well-formed: a result, or the CNI error JSON with a classified code, a message and no stack trace; returns the parsed error when the call failed. */
export function checkCniAnswer(
  a: { status: number; code?: number; output: string },
  verb: string | undefined,
): { code: number; msg: string; details?: string } | undefined {
  if (a.status === 0) {
    if (verb === 'ADD') {
      // 0.3.0 and later: "ips"; 0.1.0/0.2.0 (no cniVersion): "ip4"/"ip6".
      const r = JSON.parse(a.output) as { ips?: unknown; ip4?: unknown; ip6?: unknown };
      assert.ok(Array.isArray(r.ips) || typeof r.ip4 === 'object' || typeof r.ip6 === 'object', `an ADD result lists its addresses: ${a.output}`);
    } else if (verb !== 'VERSION') assert.equal(a.output, '', `${verb} prints nothing on success`);
    return undefined;
  }
  assert.equal(a.status, 1);
  const e = JSON.parse(a.output) as { code: unknown; msg: unknown; details?: unknown };
  assert.equal(typeof e.code, 'number', a.output);
  if (a.code !== undefined) assert.equal(a.code, e.code, 'the typed answer carries the code of its JSON');
  assert.ok(KNOWN_CODES.has(e.code as number), `a classified CNI code (not 999): ${a.output}`);
  assert.equal(typeof e.msg, 'string');
  assert.ok((e.msg as string).length > 0, 'a message');
  assert.doesNotMatch(a.output, /\n\s+at |\\n\s+at /, `no stack trace: ${a.output}`);
  return e as { code: number; msg: string; details?: string };
}
