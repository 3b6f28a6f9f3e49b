import { test } from 'node:test';
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { ProtoWriter } from '../../src/store/etcd/protobuf-wire.js';
import { readGoProfile, shareUnder } from './go-profile.js';

/** A packed repeated varint field's bytes. */
function packed(values: number[]): Buffer {
  const out: number[] = [];
  for (let v of values) {
    for (; v > 0x7f; v = Math.floor(v / 0x80)) out.push((v % 0x80) | 0x80);
    out.push(v);
  }
  return Buffer.from(out);
}

/**
 * A CPU profile as Go writes it: string table, functions, locations (the second one with an
 * inlined frame), samples with packed location ids and values.
 */
function cpuProfile(): Buffer {
  const strings = ['', 'samples', 'count', 'cpu', 'nanoseconds', 'runtime.mallocgc', 'backend.(*bucketBuffer).Copy', 'mvcc.(*store).Read', 'main'];
  const p = new ProtoWriter();
  p.bytes(1, new ProtoWriter().varint(1, 1).varint(2, 2));
  p.bytes(1, new ProtoWriter().varint(1, 3).varint(2, 4));
  // samples: [mallocgc < Copy < Read < main] 300 ns, [Read < main] 200 ns, [main] 500 ns
  p.bytes(2, new ProtoWriter().bytes(1, packed([1, 2, 3])).bytes(2, packed([3, 300])));
  p.bytes(2, new ProtoWriter().bytes(1, packed([2, 3])).bytes(2, packed([2, 200])));
  // a sample written unpacked (one varint per element), as older writers did
  p.bytes(2, new ProtoWriter().varint(1, 3).varint(2, 5).varint(2, 500));
  p.bytes(4, new ProtoWriter().varint(1, 1).bytes(4, new ProtoWriter().varint(1, 1)));
  // location 2: Copy inlined into Read (leaf first)
  p.bytes(4, new ProtoWriter().varint(1, 2).bytes(4, new ProtoWriter().varint(1, 2)).bytes(4, new ProtoWriter().varint(1, 3)));
  p.bytes(4, new ProtoWriter().varint(1, 3).bytes(4, new ProtoWriter().varint(1, 4)));
  for (const [id, name] of [
    [1, 5],
    [2, 6],
    [3, 7],
    [4, 8],
  ] as const)
    p.bytes(5, new ProtoWriter().varint(1, id).varint(2, name));
  for (const s of strings) p.bytes(6, s);
  return gzipSync(p.finish());
}

test('go profile: stacks leaf first with inlined frames, packed and unpacked values, shares under a function', () => {
  const prof = readGoProfile(cpuProfile());
  assert.deepEqual(prof.sampleTypes, ['samples', 'cpu']);
  assert.deepEqual(prof.samples[0], { frames: ['runtime.mallocgc', 'backend.(*bucketBuffer).Copy', 'mvcc.(*store).Read', 'main'], values: [3, 300] });
  assert.deepEqual(prof.samples[1]!.frames, ['backend.(*bucketBuffer).Copy', 'mvcc.(*store).Read', 'main']);
  assert.deepEqual(prof.samples[2], { frames: ['main'], values: [5, 500] });
  assert.deepEqual(shareUnder(prof, 'bucketBuffer).Copy', 'cpu', 'samples'), { total: 1000, under: 500, count: 5 });
  assert.deepEqual(shareUnder(prof, 'main', 'cpu'), { total: 1000, under: 1000, count: 0 }, 'a sample counts once');
  assert.throws(() => shareUnder(prof, 'x', 'alloc_space'), /no sample type alloc_space \(has samples, cpu\)/);
});

test('go profile: bytes that are not a profile are an error, not an empty profile', () => {
  assert.throws(() => readGoProfile(Buffer.from([0x12, 0x05, 0x01])), /past the end/);
  assert.throws(() => readGoProfile(gzipSync(new ProtoWriter().bytes(2, new ProtoWriter().bytes(1, Buffer.from([0x81]))).finish())), /inside a varint/);
});
