/**
 * The few Kubernetes CRI (package runtime.v1, k8s.io/cri-api `api.proto`) messages runtime
 * reconciliation needs, in protobuf's wire format, written by hand so no .proto file ships:
 * `VersionResponse` and `ListPodSandboxResponse` (each `PodSandbox`'s id, metadata, state,
 * created_at) are decoded; the requests we send are empty (`VersionRequest{}`, and
 * `ListPodSandboxRequest{}` — no filter: sandboxes in every state). Unknown fields are skipped
 * as protobuf requires; a malformed message is a CriDecodeError (never a partial answer).
 */

/** The answer could not be decoded: it is not evidence of anything. */
export class CriDecodeError extends Error {
  override readonly name = 'CriDecodeError';
}

export interface CriVersion {
  readonly version: string;
  readonly runtimeName: string;
  readonly runtimeVersion: string;
  readonly runtimeApiVersion: string;
}

export interface CriSandbox {
  readonly id: string;
  readonly name: string;
  readonly namespace: string;
  readonly uid: string;
  /** 0 SANDBOX_READY, 1 SANDBOX_NOTREADY. */
  readonly state: number;
  /** Nanoseconds since the epoch, as text (int64). */
  readonly createdAt: string;
}

/** Decodes a `VersionResponse`. */
export function decodeVersionResponse(buf: Buffer): CriVersion {
  const out = { version: '', runtimeName: '', runtimeVersion: '', runtimeApiVersion: '' };
  for (const f of fields(buf)) {
    if (f.wire !== 2) continue;
    const s = f.bytes!.toString('utf8');
    if (f.num === 1) out.version = s;
    else if (f.num === 2) out.runtimeName = s;
    else if (f.num === 3) out.runtimeVersion = s;
    else if (f.num === 4) out.runtimeApiVersion = s;
  }
  return out;
}

/** Decodes a `ListPodSandboxResponse` into its items. */
export function decodeListPodSandboxResponse(buf: Buffer): CriSandbox[] {
  const items: CriSandbox[] = [];
  for (const f of fields(buf)) if (f.num === 1 && f.wire === 2) items.push(decodeSandbox(f.bytes!));
  return items;
}

function decodeSandbox(buf: Buffer): CriSandbox {
  let id = '';
  let meta = { name: '', uid: '', namespace: '' };
  let state = 0;
  let createdAt = '0';
  for (const f of fields(buf)) {
    if (f.num === 1 && f.wire === 2) id = f.bytes!.toString('utf8');
    else if (f.num === 2 && f.wire === 2) meta = decodeMetadata(f.bytes!);
    else if (f.num === 3 && f.wire === 0) state = Number(f.varint!);
    else if (f.num === 4 && f.wire === 0) createdAt = BigInt.asIntN(64, f.varint!).toString();
  }
  if (id === '') throw new CriDecodeError('a PodSandbox without an id');
  return { id, ...meta, state, createdAt };
}

function decodeMetadata(buf: Buffer): { name: string; uid: string; namespace: string } {
  const m = { name: '', uid: '', namespace: '' };
  for (const f of fields(buf)) {
    if (f.wire !== 2) continue;
    if (f.num === 1) m.name = f.bytes!.toString('utf8');
    else if (f.num === 2) m.uid = f.bytes!.toString('utf8');
    else if (f.num === 3) m.namespace = f.bytes!.toString('utf8');
  }
  return m;
}

interface Field {
  readonly num: number;
  readonly wire: number;
  readonly varint?: bigint;
  readonly bytes?: Buffer;
}

/** The fields of one message, in order. */
function* fields(buf: Buffer): Generator<Field> {
  let pos = 0;
  const varint = (): bigint => {
    let v = 0n;
    for (let shift = 0n; shift < 70n; shift += 7n) {
      if (pos >= buf.length) throw new CriDecodeError('a varint runs past the end of the message');
      const b = buf[pos++]!;
      v |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return v;
    }
    throw new CriDecodeError('a varint longer than 10 bytes');
  };
  while (pos < buf.length) {
    const key = varint();
    const num = Number(key >> 3n);
    const wire = Number(key & 7n);
    if (num === 0) throw new CriDecodeError('field number 0');
    if (wire === 0) yield { num, wire, varint: varint() };
    else if (wire === 2) {
      const len = Number(varint());
      if (len > buf.length - pos) throw new CriDecodeError(`field ${num}: ${len} bytes announced, ${buf.length - pos} left`);
      yield { num, wire, bytes: buf.subarray(pos, pos + len) };
      pos += len;
    } else if (wire === 1 || wire === 5) {
      const n = wire === 1 ? 8 : 4;
      if (n > buf.length - pos) throw new CriDecodeError(`field ${num}: truncated fixed-size value`);
      pos += n;
    } else throw new CriDecodeError(`field ${num}: wire type ${wire} is not supported`);
  }
}
