/**
 * Fuzzing of the agent socket protocol's decoder (frame.ts), pure: random bytes, valid frames
 * with bytes flipped, cut or appended, all fed in random chunks. The reader returns a request
 * or throws FrameError with a reason — never another error, never a request that is not one;
 * valid requests of random content decode to themselves however they are chunked. Seeds
 * printed; see test/helpers/fuzz.ts. (A live agent fed random bytes: test/e2e/agent-shim-fuzz.test.ts.)
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { anyBytes, anyText, fc, fuzz } from '../../test/helpers/fuzz.js';
import { FrameError, answerReader, encodeAnswer, encodeRequest, requestReader, type Request } from './frame.js';

const FILE = 'frame.fuzz';

/** Feeds `bytes` to a fresh reader in pieces cut at `cuts`; the decoded message, undefined (incomplete), or the thrown error. */
function feed<T>(reader: { push(b: Buffer): T | undefined }, bytes: Buffer, cuts: readonly number[]): { value?: T; error?: unknown } {
  const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  let prev = 0;
  try {
    for (const c of [...at, bytes.length]) {
      if (c < prev) continue;
      const v = reader.push(bytes.subarray(prev, c));
      prev = c;
      if (v !== undefined) return { value: v };
    }
  } catch (error) {
    return { error };
  }
  return {};
}

const envKey = fc.oneof(
  fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,20}$/),
  fc.constantFrom('CNI_COMMAND', 'CNI_ARGS', '__proto__', 'constructor', 'toString', 'hasOwnProperty'),
);
const request: fc.Arbitrary<Request> = fc.oneof(
  { weight: 1, arbitrary: fc.constant({ kind: 'status' as const }) },
  {
    weight: 6,
    arbitrary: fc
      .record({
        env: fc.dictionary(
          envKey,
          anyText(40).map((s) => Buffer.from(s).toString('utf8')),
          { maxKeys: 8 },
        ),
        stdin: anyBytes(300),
      })
      .map((call) => ({ kind: 'cni' as const, call })),
  },
);
const cuts = fc.array(fc.nat(), { maxLength: 6 });

function isFrameError(e: unknown): boolean {
  return e instanceof FrameError && e.message.length > 0;
}

test('fuzz frame.ts: valid requests decode to themselves however they are chunked', (t) =>
  fuzz(t, { runs: 1000, file: FILE }, fc.tuple(request, cuts), ([req, c]) => {
    const got = feed(requestReader(), encodeRequest(req), c);
    assert.equal(got.error, undefined, String(got.error));
    assert.ok(got.value, 'complete');
    if (req.kind === 'status') assert.deepEqual(got.value, req);
    else {
      assert.equal(got.value.kind, 'cni');
      const call = got.value.call;
      assert.deepEqual(Object.entries(call.env), Object.entries(req.call.env), 'the environment, keys like __proto__ included');
      assert.ok(call.stdin.equals(req.call.stdin), 'stdin');
    }
  }));

test('fuzz frame.ts: damaged requests (flipped, cut, extended) give a request or a FrameError, nothing else', (t) => {
  const damaged = fc.tuple(
    request,
    fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 4 }),
    fc.option(fc.nat(), { nil: undefined }),
    fc.option(anyBytes(16), { nil: undefined }),
    cuts,
  );
  return fuzz(t, { runs: 1000, file: FILE }, damaged, ([req, flips, cutAt, extra, c]) => {
    let bytes = Buffer.from(encodeRequest(req));
    for (const [pos, v] of flips) if (bytes.length > 0) bytes[pos % bytes.length] = v;
    if (cutAt !== undefined) bytes = bytes.subarray(0, cutAt % (bytes.length + 1));
    if (extra !== undefined) bytes = Buffer.concat([bytes, extra]);
    const got = feed(requestReader(), bytes, c);
    if (got.error !== undefined) assert.ok(isFrameError(got.error), `not a FrameError: ${String(got.error)}`);
    if (got.value !== undefined) assert.ok(got.value.kind === 'status' || (got.value.kind === 'cni' && Buffer.isBuffer(got.value.call.stdin)));
  });
});

test('fuzz frame.ts: random bytes to the request and the answer readers', (t) =>
  fuzz(
    t,
    { runs: 1000, file: FILE },
    fc.tuple(
      fc.oneof(
        anyBytes(64),
        anyBytes(64).map((b) => Buffer.concat([Buffer.from('PDPM\0\0\0\x01'), b])),
      ),
      cuts,
    ),
    ([bytes, c]) => {
      for (const reader of [requestReader(), answerReader()] as { push(b: Buffer): unknown }[]) {
        const got = feed(reader, bytes, c);
        if (got.error !== undefined) assert.ok(isFrameError(got.error), `not a FrameError: ${String(got.error)}`);
      }
      const a = feed(answerReader(), encodeAnswer({ status: bytes.length % 3, body: bytes }), c);
      assert.ok(a.value && (a.value as { body: Buffer }).body.equals(bytes), 'an answer round-trips');
    },
  ));
