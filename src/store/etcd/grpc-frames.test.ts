import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GrpcFrameError, GrpcFrames, grpcFrame } from './grpc-frames.js';

const body = Buffer.concat([grpcFrame(Buffer.from('one')), grpcFrame(Buffer.alloc(0)), grpcFrame(Buffer.from('three-three'))]);
const texts = (bs: Buffer[]): string[] => bs.map((b) => b.toString());

test('a frame is a 0 flag, a 4-byte big-endian length and the message', () => {
  assert.equal(grpcFrame(Buffer.from('ab')).toString('hex'), '0000000002' + '6162');
});

test('several messages in one chunk come out in order, an empty one included', () => {
  const f = new GrpcFrames(1 << 20);
  assert.deepEqual(texts(f.push(body)), ['one', '', 'three-three']);
  assert.equal(f.idle, true);
});

test('every split of the body into two chunks gives the same messages', () => {
  for (let cut = 0; cut <= body.length; cut++) {
    const f = new GrpcFrames(1 << 20);
    const got = [...f.push(body.subarray(0, cut)), ...f.push(body.subarray(cut))];
    assert.deepEqual(texts(got), ['one', '', 'three-three'], `cut at ${cut}`);
    assert.equal(f.idle, true);
  }
});

test('one byte at a time: a prefix split across chunks, a message completed by a later chunk', () => {
  const f = new GrpcFrames(1 << 20);
  const got: Buffer[] = [];
  for (let i = 0; i < body.length; i++) {
    got.push(...f.push(body.subarray(i, i + 1)));
    if (i === 2) assert.equal(f.idle, false, 'inside the first prefix');
  }
  assert.deepEqual(texts(got), ['one', '', 'three-three']);
});

test('a large message in many chunks is whole once its last byte came', () => {
  const big = Buffer.alloc(3 << 20, 7);
  big[big.length - 1] = 9;
  const framed = grpcFrame(big);
  const f = new GrpcFrames(4 << 20);
  for (let at = 0; at < framed.length - 16384; at += 16384) assert.deepEqual(f.push(framed.subarray(at, at + 16384)), []);
  const [m, ...rest] = f.push(framed.subarray(framed.length - (framed.length % 16384 || 16384)));
  assert.deepEqual(rest, []);
  assert.ok(m !== undefined && m.equals(big));
});

test('a compressed message or one over the limit throws GrpcFrameError', () => {
  assert.throws(() => new GrpcFrames(100).push(Buffer.from('0100000001ff', 'hex')), GrpcFrameError);
  assert.throws(
    () => new GrpcFrames(100).push(Buffer.from('0000000065', 'hex')),
    (e: unknown) => e instanceof GrpcFrameError && /101 bytes is over 100/.test(e.message),
  );
});
