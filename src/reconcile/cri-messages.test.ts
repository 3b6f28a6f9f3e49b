import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CriDecodeError, decodeListPodSandboxResponse, decodeVersionResponse } from './cri-messages.js';

/** protobuf wire encoding, enough for the tests: varints, length-delimited fields. */
const varint = (n: bigint): number[] => {
  const out: number[] = [];
  let v = BigInt.asUintN(64, n);
  do {
    const b = Number(v & 0x7fn);
    v >>= 7n;
    out.push(v === 0n ? b : b | 0x80);
  } while (v !== 0n);
  return out;
};
const field = (num: number, v: string | Buffer | bigint): Buffer =>
  typeof v === 'bigint'
    ? Buffer.from([...varint(BigInt(num << 3)), ...varint(v)])
    : Buffer.concat([Buffer.from([...varint(BigInt((num << 3) | 2)), ...varint(BigInt(Buffer.byteLength(v)))]), Buffer.from(v)]);
const msg = (...parts: Buffer[]): Buffer => Buffer.concat(parts);

describe('CRI messages', () => {
  it('decodes ListPodSandboxResponse items (id, metadata, state, created_at), skipping unknown fields', () => {
    const meta = msg(field(1, 'web-1'), field(2, 'uid-1'), field(3, 'shop'), field(4, 2n));
    const labels = msg(field(1, 'app'), field(2, 'web')); // map entry: an unknown field 5 here
    const a = msg(
      field(1, 'a'.repeat(64)),
      field(2, meta),
      field(3, 1n),
      field(4, 1_700_000_000_000_000_000n),
      field(5, labels),
      Buffer.from([0x35, 1, 2, 3, 4]) /* fixed32 field 6 */,
    );
    const b = msg(field(1, 'b'.repeat(64)));
    const items = decodeListPodSandboxResponse(msg(field(1, a), field(1, b)));
    assert.deepEqual(items, [
      { id: 'a'.repeat(64), name: 'web-1', uid: 'uid-1', namespace: 'shop', state: 1, createdAt: '1700000000000000000' },
      { id: 'b'.repeat(64), name: '', uid: '', namespace: '', state: 0, createdAt: '0' },
    ]);
    assert.deepEqual(decodeListPodSandboxResponse(Buffer.alloc(0)), []);
  });

  it('decodes VersionResponse', () => {
    assert.deepEqual(decodeVersionResponse(msg(field(1, '0.1.0'), field(2, 'containerd'), field(3, '1.6.20'), field(4, 'v1'))), {
      version: '0.1.0',
      runtimeName: 'containerd',
      runtimeVersion: '1.6.20',
      runtimeApiVersion: 'v1',
    });
  });

  it('a truncated or malformed answer is an error, never a partial list', () => {
    const whole = msg(field(1, msg(field(1, 'x'))), field(1, msg(field(1, 'y'))));
    assert.throws(() => decodeListPodSandboxResponse(whole.subarray(0, whole.length - 1)), CriDecodeError);
    assert.throws(() => decodeListPodSandboxResponse(Buffer.from([0x0b])), /wire type 3/);
    assert.throws(() => decodeListPodSandboxResponse(Buffer.from([0x08, 0xff])), /varint runs past/);
    assert.throws(() => decodeListPodSandboxResponse(msg(field(1, msg(field(3, 0n))))), /without an id/);
  });
});
