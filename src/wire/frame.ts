/**
 * The agent's socket protocol, version 1: one request and one answer per connection, each a
 * length-framed binary message. Chosen over HTTP/1.1 on the unix socket because the C shim then
 * needs no HTTP parser (a few dozen lines of framing instead), and one connection per call makes
 * an agent crash mid-call an EOF the shim sees at once.
 *
 *   request:  "PDPM" u32 version(1) u32 kind u32 bodyLen body
 *             kind 1 (CNI call): u32 nEnv, nEnv × (u32 len, "KEY=VALUE"), u32 stdinLen, stdin
 *             kind 2 (status):   empty body
 *   answer:   "PDPM" u32 version(1) u32 exitStatus u32 len bytes   (stdout of the call, or
 *             the status JSON)
 *
 * All integers big-endian. Pure: encoders and an incremental decoder, no I/O.
 */

export const MAGIC = 0x5044504d; // "PDPM"
export const PROTOCOL_VERSION = 1;
export const KIND_CNI = 1;
export const KIND_STATUS = 2;
/** Largest stdin the shim sends (a network config is kilobytes). */
export const MAX_STDIN = 1 << 20;
/** Largest request body: stdin plus room for the environment. */
export const MAX_REQUEST_BODY = MAX_STDIN + (256 << 10);
/** Largest answer either side accepts. */
export const MAX_ANSWER = 16 << 20;
const HEADER = 16;

export interface CniCall {
  readonly env: Readonly<Record<string, string>>;
  readonly stdin: Buffer;
}

export type Request = { readonly kind: 'cni'; readonly call: CniCall } | { readonly kind: 'status' };

export interface Answer {
  readonly status: number;
  readonly body: Buffer;
}

/** A request the agent cannot read: `message` says what was wrong, for the error answer. */
export class FrameError extends Error {
  override readonly name = 'FrameError';
}

function header(a: number, b: number, len: number): Buffer {
  const h = Buffer.alloc(HEADER);
  h.writeUInt32BE(MAGIC, 0);
  h.writeUInt32BE(PROTOCOL_VERSION, 4);
  h.writeUInt32BE(a, 8);
  h.writeUInt32BE(b === -1 ? len : b, 12);
  return h;
}

export function encodeRequest(req: Request): Buffer {
  if (req.kind === 'status') return header(KIND_STATUS, 0, 0);
  const parts: Buffer[] = [];
  const entries = Object.entries(req.call.env);
  const n = Buffer.alloc(4);
  n.writeUInt32BE(entries.length);
  parts.push(n);
  for (const [k, v] of entries) parts.push(lenPrefixed(Buffer.from(`${k}=${v}`)));
  parts.push(lenPrefixed(req.call.stdin));
  const body = Buffer.concat(parts);
  return Buffer.concat([header(KIND_CNI, body.length, body.length), body]);
}

export function encodeAnswer(a: Answer): Buffer {
  return Buffer.concat([header(a.status, a.body.length, a.body.length), a.body]);
}

function lenPrefixed(b: Buffer): Buffer {
  const l = Buffer.alloc(4);
  l.writeUInt32BE(b.length);
  return Buffer.concat([l, b]);
}

/**
 * Accumulates bytes of one message; `push` returns the decoded message once complete, else
 * undefined. Throws FrameError on a bad magic, version, kind or size, as soon as the header shows it.
 */
export class MessageReader<T> {
  #chunks: Buffer[] = [];
  #have = 0;
  #need = HEADER;
  #head: Buffer | undefined;

  constructor(
    private readonly maxBody: number,
    private readonly decode: (head: Buffer, body: Buffer) => T,
    private readonly checkHead: (head: Buffer) => void = () => {},
  ) {}

  push(chunk: Buffer): T | undefined {
    this.#chunks.push(chunk);
    this.#have += chunk.length;
    if (!this.#head && this.#have >= HEADER) {
      const all = Buffer.concat(this.#chunks);
      const head = all.subarray(0, HEADER);
      if (head.readUInt32BE(0) !== MAGIC) throw new FrameError('not a podipam agent message (bad magic)');
      const v = head.readUInt32BE(4);
      if (v !== PROTOCOL_VERSION) throw new FrameError(`protocol version ${v} is not supported (this agent speaks ${PROTOCOL_VERSION})`);
      const len = head.readUInt32BE(12);
      if (len > this.maxBody) throw new FrameError(`message body of ${len} bytes exceeds the limit of ${this.maxBody} bytes`);
      this.checkHead(head);
      this.#head = Buffer.from(head);
      this.#need = HEADER + len;
      this.#chunks = [all];
    }
    if (!this.#head || this.#have < this.#need) return undefined;
    const all = Buffer.concat(this.#chunks);
    if (this.#have > this.#need) throw new FrameError(`${this.#have - this.#need} bytes after the end of the message`);
    return this.decode(this.#head, all.subarray(HEADER, this.#need));
  }
}

/** A reader for requests (the agent's side). */
export function requestReader(): MessageReader<Request> {
  return new MessageReader(MAX_REQUEST_BODY, decodeRequest, (head) => {
    const kind = head.readUInt32BE(8);
    if (kind !== KIND_CNI && kind !== KIND_STATUS) throw new FrameError(`unknown request kind ${kind}`);
  });
}

/** A reader for answers (the client's side). */
export function answerReader(): MessageReader<Answer> {
  return new MessageReader(MAX_ANSWER, (head, body) => ({ status: head.readUInt32BE(8), body: Buffer.from(body) }));
}

function decodeRequest(head: Buffer, body: Buffer): Request {
  if (head.readUInt32BE(8) === KIND_STATUS) {
    if (body.length !== 0) throw new FrameError('a status request has no body');
    return { kind: 'status' };
  }
  let off = 0;
  // What is read is named only when it is missing: no text is built for a request that is whole.
  const u32 = (what: () => string): number => {
    if (off + 4 > body.length) throw new FrameError(`truncated request: ${what()} missing`);
    const v = body.readUInt32BE(off);
    off += 4;
    return v;
  };
  const bytes = (what: () => string): Buffer => {
    const len = u32(() => `length of ${what()}`);
    if (off + len > body.length) throw new FrameError(`truncated request: ${what()} is ${len} bytes, ${body.length - off} left`);
    const b = body.subarray(off, off + len);
    off += len;
    return b;
  };
  const n = u32(() => 'environment count');
  if (n > 4096) throw new FrameError(`environment of ${n} variables exceeds the limit of 4096`);
  // One shape for every request's environment, whatever its variables and their order (see
  // forwardedEnv in agent-client.ts): a dictionary with no prototype.
  const env = Object.create(null) as Record<string, string>;
  for (let i = 0; i < n; i++) {
    const kv = bytes(() => `environment entry ${i}`).toString('utf8');
    const eq = kv.indexOf('=');
    if (eq <= 0) throw new FrameError(`environment entry ${i} ${JSON.stringify(kv.slice(0, 64))} is not KEY=VALUE`);
    // defineProperty: a variable named __proto__ is an entry like any other, never the prototype.
    Object.defineProperty(env, kv.slice(0, eq), { value: kv.slice(eq + 1), enumerable: true, writable: true, configurable: true });
  }
  const stdin = bytes(() => 'stdin');
  if (stdin.length > MAX_STDIN) throw new FrameError(`stdin of ${stdin.length} bytes exceeds the limit of ${MAX_STDIN} bytes`);
  if (off !== body.length) throw new FrameError(`${body.length - off} bytes after the end of the request`);
  return { kind: 'cni', call: { env, stdin: Buffer.from(stdin) } };
}
