/**
 * Splits a gRPC response body into its messages. gRPC frames each message as a 1-byte
 * compressed flag, a 4-byte big-endian length and the message; HTTP/2 cuts the body into DATA
 * chunks without regard to those frames, so one chunk may hold several messages, the end of
 * one and the start of the next, or a sliver of a large one (a watch's catch-up response can
 * be megabytes). The pieces of an unfinished message are kept apart and joined once, when it
 * is whole, so a large message costs no quadratic copying. A compressed message (podipam
 * never asks for compression) or one over `maxMessage` bytes throws GrpcFrameError.
 */

/** A body that does not split into gRPC messages. */
export class GrpcFrameError extends Error {
  override readonly name = 'GrpcFrameError';
}

export class GrpcFrames {
  readonly #maxMessage: number;
  /** Bytes of the frame being read: its 5-byte prefix while incomplete, then the message's pieces. */
  #head: Buffer = Buffer.alloc(0);
  #pieces: Buffer[] = [];
  #have = 0;
  /** Length of the message being read; -1 while its prefix is incomplete. */
  #want = -1;

  constructor(maxMessage: number) {
    this.#maxMessage = maxMessage;
  }

  /** True when no partial frame is pending (the body may end here). */
  get idle(): boolean {
    return this.#want < 0 && this.#head.length === 0;
  }

  /** The messages `chunk` completes, in order. */
  push(chunk: Buffer): Buffer[] {
    const out: Buffer[] = [];
    let at = 0;
    while (at < chunk.length) {
      if (this.#want < 0) {
        const need = 5 - this.#head.length;
        const take = chunk.subarray(at, at + need);
        at += take.length;
        this.#head = this.#head.length === 0 ? take : Buffer.concat([this.#head, take]);
        if (this.#head.length < 5) break;
        if (this.#head[0] !== 0) throw new GrpcFrameError(`compressed gRPC message (flag ${String(this.#head[0])}) was not asked for`);
        const length = this.#head.readUInt32BE(1);
        if (length > this.#maxMessage) throw new GrpcFrameError(`gRPC message of ${length} bytes is over ${this.#maxMessage}`);
        this.#head = Buffer.alloc(0);
        this.#want = length;
        this.#pieces = [];
        this.#have = 0;
      }
      const take = chunk.subarray(at, at + (this.#want - this.#have));
      at += take.length;
      if (take.length > 0) this.#pieces.push(take);
      this.#have += take.length;
      if (this.#have === this.#want) {
        out.push(this.#pieces.length === 1 ? (this.#pieces[0] as Buffer) : Buffer.concat(this.#pieces, this.#have));
        this.#pieces = [];
        this.#have = 0;
        this.#want = -1;
      }
    }
    return out;
  }
}

/** `message` with its gRPC frame prefix (uncompressed). */
export function grpcFrame(message: Buffer): Buffer {
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(message.length, 1);
  return Buffer.concat([prefix, message]);
}
