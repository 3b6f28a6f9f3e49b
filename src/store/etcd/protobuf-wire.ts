/**
 * The protobuf wire format, as much as etcd's messages need: a writer of varint and
 * length-delimited fields, and a reader that walks a message's fields. Integers are written
 * from non-negative safe numbers or decimal strings (etcd's int64s) and read back as decimal
 * strings, so a uint64 such as a cluster id keeps every digit. Fields of other wire types are
 * skipped on read; a malformed message throws ProtobufError.
 */

/** A message that does not parse as protobuf. */
export class ProtobufError extends Error {
  override readonly name = 'ProtobufError';
}

/** Builds one message: fields appended in the order written. */
export class ProtoWriter {
  readonly #parts: Buffer[] = [];
  #size = 0;

  /**
   * A varint field (int64, uint64, enum, bool); a zero is left out as proto3 does, unless
   * `always` (a member of a oneof, whose presence is its meaning).
   */
  varint(field: number, value: number | string | bigint | boolean, always = false): this {
    const small =
      typeof value === 'boolean'
        ? value
          ? 1
          : 0
        : typeof value === 'number'
          ? value
          : typeof value === 'string' && /^\d{1,15}$/.test(value)
            ? Number(value)
            : undefined;
    if (small !== undefined && Number.isSafeInteger(small) && small >= 0) {
      if (small === 0 && !always) return this;
      this.#push(Buffer.from([...smallVarint(field * 8), ...smallVarint(small)]));
      return this;
    }
    const n = BigInt(value);
    if (n < 0n || n >= 1n << 64n) throw new RangeError(`protobuf field ${field}: ${String(value)} is not a uint64`);
    if (n === 0n && !always) return this;
    this.#push(Buffer.from([...smallVarint(field * 8), ...varintBytes(n)]));
    return this;
  }

  /** A length-delimited field: bytes, a string (UTF-8), or an embedded message. Written even when empty. */
  bytes(field: number, value: Buffer | string | ProtoWriter): this {
    const body = value instanceof ProtoWriter ? value.finish() : typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
    this.#push(Buffer.from([...smallVarint(field * 8 + 2), ...smallVarint(body.length)]));
    this.#push(body);
    return this;
  }

  finish(): Buffer {
    return Buffer.concat(this.#parts, this.#size);
  }

  #push(b: Buffer): void {
    this.#parts.push(b);
    this.#size += b.length;
  }
}

/** The varint of a non-negative safe integer, without BigInt. */
function smallVarint(n: number): number[] {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n % 0x80) | 0x80);
    n = Math.floor(n / 0x80);
  }
  out.push(n);
  return out;
}

function varintBytes(n: bigint): number[] {
  const out: number[] = [];
  while (n > 0x7fn) {
    out.push(Number(n & 0x7fn) | 0x80);
    n >>= 7n;
  }
  out.push(Number(n));
  return out;
}

/** One field of a message: a varint as a decimal string, or the bytes of a length-delimited field. */
export type ProtoField =
  { readonly no: number; readonly varint: string; readonly bytes?: undefined } | { readonly no: number; readonly bytes: Buffer; readonly varint?: undefined };

/** The fields of `buf` in wire order (varint and length-delimited; fixed-width ones skipped). */
export function* protoFields(buf: Buffer): Generator<ProtoField> {
  let at = 0;
  const readVarint = (): bigint | number => {
    // Up to 7 bytes (49 bits) in plain numbers — tags, lengths, revisions; beyond in BigInt.
    let n = 0;
    for (let i = 0; i < 7; i++) {
      if (at >= buf.length) throw new ProtobufError('truncated varint');
      const b = buf[at++] as number;
      n += (b & 0x7f) * 2 ** (7 * i);
      if (b < 0x80) return n;
    }
    let big = BigInt(n);
    for (let shift = 49n; shift < 70n; shift += 7n) {
      if (at >= buf.length) throw new ProtobufError('truncated varint');
      const b = buf[at++] as number;
      big |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) return big;
    }
    throw new ProtobufError('varint longer than 10 bytes');
  };
  while (at < buf.length) {
    const tag = Number(readVarint());
    const no = Math.floor(tag / 8);
    const type = tag % 8;
    if (no === 0) throw new ProtobufError('field number 0');
    if (type === 0) yield { no, varint: String(readVarint()) };
    else if (type === 2) {
      const len = Number(readVarint());
      if (at + len > buf.length) throw new ProtobufError(`field ${no}: ${len} bytes past the end of the message`);
      yield { no, bytes: buf.subarray(at, at + len) };
      at += len;
    } else if (type === 1) at += 8;
    else if (type === 5) at += 4;
    else throw new ProtobufError(`field ${no}: wire type ${type} is not supported`);
    if (at > buf.length) throw new ProtobufError(`field ${no}: past the end of the message`);
  }
}
