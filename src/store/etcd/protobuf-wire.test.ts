import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ProtoWriter, ProtobufError, protoFields } from './protobuf-wire.js';

const hex = (b: Buffer): string => b.toString('hex');

test('writes varint and length-delimited fields as the protobuf encoding guide spells them', () => {
  // The guide's examples: field 1 = 150 is 08 96 01; field 2 = "testing" is 12 07 74 65 73 74 69 6e 67.
  assert.equal(hex(new ProtoWriter().varint(1, 150).finish()), '089601');
  assert.equal(hex(new ProtoWriter().bytes(2, 'testing').finish()), '120774657374696e67');
  // proto3 leaves zeros out, unless a oneof member's presence is its meaning.
  assert.equal(hex(new ProtoWriter().varint(1, 0).varint(9, false).finish()), '');
  assert.equal(hex(new ProtoWriter().varint(6, '0', true).finish()), '3000');
  assert.equal(hex(new ProtoWriter().varint(9, true).bytes(1, Buffer.alloc(0)).finish()), '48010a00');
  // An embedded message is its bytes, length-prefixed.
  assert.equal(hex(new ProtoWriter().bytes(3, new ProtoWriter().varint(1, 150)).finish()), '1a03089601');
});

test('uint64s keep every digit both ways; out of range is a RangeError', () => {
  const max = '18446744073709551615';
  const b = new ProtoWriter().varint(1, max).finish();
  assert.equal(hex(b), '08ffffffffffffffffff01');
  assert.deepEqual([...protoFields(b)], [{ no: 1, varint: max }]);
  assert.throws(() => new ProtoWriter().varint(1, '18446744073709551616'), RangeError);
  assert.throws(() => new ProtoWriter().varint(1, -1), RangeError);
});

test('reads the fields in wire order, skipping fixed-width ones', () => {
  const b = Buffer.from('089601' + '0d01020304' + '120774657374696e67' + '090102030405060708' + '1800', 'hex');
  const fields = [...protoFields(b)].map((f) => (f.bytes === undefined ? [f.no, f.varint] : [f.no, f.bytes.toString('utf8')]));
  assert.deepEqual(fields, [
    [1, '150'],
    [2, 'testing'],
    [3, '0'],
  ]);
});

test('a malformed message is a ProtobufError, never a read past its end', () => {
  for (const [bytes, why] of [
    ['0896', /truncated varint/],
    ['1205616263', /past the end/],
    ['0b', /wire type 3/],
    ['0001', /field number 0/],
    ['08ffffffffffffffffffff01', /longer than 10 bytes/],
    ['0d0102', /past the end/],
  ] as const) {
    assert.throws(
      () => [...protoFields(Buffer.from(bytes, 'hex'))],
      (e: unknown) => e instanceof ProtobufError && why.test(e.message),
      bytes,
    );
  }
});
