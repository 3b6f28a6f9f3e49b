/**
 * An etcd member's answers to the calls podipam's etcd client makes — KV Range and Txn, and
 * Watch, over gRPC, in the shapes etcd-grpc-codec.ts and etcd-watch-codec.ts write and read —
 * served from this process's memory on a loopback port. The agent's warm-up (src/agent/warm-up.ts) points an EtcdStore at one when
 * the agent's datastore is etcd, so the client's code (the store, the gateway, the HTTP/2
 * sessions, the codec) runs before the first pod's call needs it, without a request to the
 * cluster: measured with `bench/tools/agent-ab.ts`, a cluster-mode agent on etcd whose client
 * code V8 had never optimised answered 18-20 % slower than one optimising throughout.
 *
 * Not an etcd: no Raft, no persistence, no auth, no compaction, no leases, no progress
 * notifications; methods other than Range, Txn and Watch answer UNIMPLEMENTED. What it does, it
 * does as etcd does: one revision per txn that changes something (starting from 1), create/mod
 * revisions and versions per key, MOD/CREATE/VERSION compares (an absent key compares as 0),
 * ranges of one key, of `[key, range_end)` and from a key on (`range_end` "\0"), with `limit`
 * (and `more`, `count`), `count_only` and reads at a past `revision`; watches from a past
 * revision (replayed) or from now, one response per revision. Each key's history is kept for the
 * store's life (a warm-up's few thousand writes). Bounded (LoopbackLimits, MAX_STREAMS,
 * MAX_CONNECTIONS, WATCH_BUFFER_BYTES, etcd's request size and ops per txn), as a local process
 * may connect to it. Keys compare byte-wise (held as latin1
 * strings).
 */
import { type Http2Server, type ServerHttp2Session, type ServerHttp2Stream, createServer } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { GrpcFrames, grpcFrame } from './grpc-frames.js';
import { ProtoWriter, protoFields } from './protobuf-wire.js';
import { MAX_TXN_OPS } from '../check-input.js';
import {
  INVALID_ARGUMENT,
  type Live,
  RESOURCE_EXHAUSTED,
  Refusal,
  UNIMPLEMENTED,
  type Version,
  bytesOf,
  inRange,
  intOf,
  keyValue,
  rangeRequest,
  rangeResponse,
  refuse,
  requestOp,
} from './loopback-wire.js';

/** The largest request accepted: etcd's default request limit (1.5 MiB) and a little room for the framing. */
const MAX_REQUEST_BYTES = (3 << 19) + 4096;
/** Bytes counted for every version kept besides its key and value (the objects holding it). */
const ENTRY_OVERHEAD_BYTES = 96;
/** A watch stream whose client leaves more than this unread is ended RESOURCE_EXHAUSTED. */
const WATCH_BUFFER_BYTES = 4 << 20;
/** Streams at once on a connection, and connections at once. */
const MAX_STREAMS = 32;
const MAX_CONNECTIONS = 16;

/** What a loopback etcd keeps and serves at most (past it: RESOURCE_EXHAUSTED). */
export interface LoopbackLimits {
  /** Bytes of every version kept (keys, values, ENTRY_OVERHEAD_BYTES each); default 64 MiB. */
  readonly maxStoredBytes?: number;
  /** Watchers over all streams; default 256 (a warm-up's agent opens a few). */
  readonly maxWatchers?: number;
}

/** One key's change at one revision. */
interface Change {
  readonly rev: number;
  readonly key: string;
  readonly v: Version;
}

interface Watcher {
  readonly stream: ServerHttp2Stream;
  readonly id: number;
  key: string;
  /** Events of revisions before this one are not its (0: from now). */
  start: number;
  /** undefined: `key` alone; "\0": from `key` on. */
  end: string | undefined;
  /** Ends its stream with a gRPC status. */
  readonly close: (code: number, message: string) => void;
}

export class LoopbackEtcd {
  /** `etcd://127.0.0.1:PORT`, for openStore. */
  readonly url: string;
  readonly #server: Http2Server;
  readonly #keys = new Map<string, Version[]>();
  #rev = 1;
  readonly #clusterId: string;
  readonly #memberId: string;
  readonly #sessions = new Set<ServerHttp2Session>();
  /** Every change in the order written (what a watch from a past revision replays). */
  readonly #log: Change[] = [];
  readonly #watchers = new Set<Watcher>();
  readonly #limits: Required<LoopbackLimits>;
  /** Bytes kept, as LoopbackLimits.maxStoredBytes counts them. */
  #stored = 0;

  private constructor(server: Http2Server, limits: Required<LoopbackLimits>) {
    this.#server = server;
    this.#limits = limits;
    server.on('session', (session: ServerHttp2Session) => {
      this.#sessions.add(session);
      session.once('close', () => this.#sessions.delete(session));
    });
    this.url = `etcd://127.0.0.1:${(server.address() as AddressInfo).port}`;
    // Any ids will do (the cluster's is its identity: EtcdStore.identity), but of etcd's size: 64
    // bits, which the client reads past its small-number path.
    this.#clusterId = (BigInt(`0x${randomBytes(8).toString('hex')}`) | (1n << 63n)).toString();
    this.#memberId = (BigInt(`0x${randomBytes(8).toString('hex')}`) | (1n << 62n)).toString();
    server.on('stream', (stream, headers) => this.#serve(stream, String(headers[':path'] ?? '')));
  }

  /** Listening on an ephemeral loopback port. */
  static async start(limits: LoopbackLimits = {}): Promise<LoopbackEtcd> {
    const server = createServer({ settings: { maxConcurrentStreams: MAX_STREAMS } });
    server.maxConnections = MAX_CONNECTIONS;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    return new LoopbackEtcd(server, { maxStoredBytes: limits.maxStoredBytes ?? 64 << 20, maxWatchers: limits.maxWatchers ?? 256 });
  }

  /** Stops listening and ends its clients' sessions. */
  async close(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.#server.close(() => resolve());
      // Sessions still open would hold close() until their clients leave.
      for (const s of this.#sessions) s.destroy();
    });
  }

  #serve(stream: ServerHttp2Stream, path: string): void {
    if (path === '/etcdserverpb.Watch/Watch') {
      this.#watchStream(stream);
      return;
    }
    const frames = new GrpcFrames(MAX_REQUEST_BYTES);
    const messages: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => {
      if (stream.headersSent) return; // refused already: the rest is not read into memory
      try {
        messages.push(...frames.push(chunk));
        if (messages.length > 1) throw new Refusal(INVALID_ARGUMENT, 'a unary call carries one request message');
      } catch (e) {
        refuse(stream, e instanceof Refusal ? e.code : INVALID_ARGUMENT, (e as Error).message);
      }
    });
    stream.on('error', () => undefined); // a client gone: nothing to answer
    stream.on('end', () => {
      if (stream.headersSent || stream.destroyed) return;
      try {
        const request = messages[0];
        if (request === undefined || !frames.idle) throw new Refusal(INVALID_ARGUMENT, 'the request ended without a whole message');
        let answer: Buffer;
        if (path === '/etcdserverpb.KV/Range') answer = this.#range(request).finish();
        else if (path === '/etcdserverpb.KV/Txn') answer = this.#txn(request).finish();
        else throw new Refusal(UNIMPLEMENTED, `${path} is not served by the loopback etcd`);
        stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
        stream.once('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
        stream.end(grpcFrame(answer));
      } catch (e) {
        refuse(stream, e instanceof Refusal ? e.code : INVALID_ARGUMENT, (e as Error).message);
      }
    });
  }

  #header(): ProtoWriter {
    return new ProtoWriter().varint(1, this.#clusterId).varint(2, this.#memberId).varint(3, this.#rev).varint(4, 2);
  }

  /** The version of `key` live at `rev`, if any. */
  #at(key: string, rev: number): (Version & { value: Buffer }) | undefined {
    const versions = this.#keys.get(key);
    if (versions === undefined) return undefined;
    for (let i = versions.length - 1; i >= 0; i--) {
      const v = versions[i]!;
      if (v.rev <= rev) return v.value === undefined ? undefined : (v as Version & { value: Buffer });
    }
    return undefined;
  }

  /** Keys live at `rev` in `[key, end)` ("\0": from `key` on; undefined: `key` alone), in byte order. */
  #select(key: string, end: string | undefined, rev: number): Live[] {
    if (end === undefined) {
      const v = this.#at(key, rev);
      return v === undefined ? [] : [{ key, v }];
    }
    const out: Live[] = [];
    for (const k of this.#keys.keys()) {
      if (k < key || (end !== '\0' && k >= end)) continue;
      const v = this.#at(k, rev);
      if (v !== undefined) out.push({ key: k, v });
    }
    return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  #range(buf: Buffer): ProtoWriter {
    const r = rangeRequest(buf);
    if (r.rev > this.#rev) throw new Refusal(11, 'etcdserver: mvcc: required revision is a future revision');
    return rangeResponse(this.#header(), this.#select(r.key, r.end, r.rev === 0 ? this.#rev : r.rev), r.limit, r.countOnly);
  }

  #txn(buf: Buffer): ProtoWriter {
    const compares: Buffer[] = [];
    const success: Buffer[] = [];
    const failure: Buffer[] = [];
    for (const f of protoFields(buf)) {
      const b = f.bytes;
      if (b === undefined) throw new Refusal(INVALID_ARGUMENT, `TxnRequest field ${f.no} is not a message`);
      if (f.no === 1) compares.push(b);
      else if (f.no === 2) success.push(b);
      else if (f.no === 3) failure.push(b);
      else throw new Refusal(UNIMPLEMENTED, `TxnRequest field ${f.no} is not served by the loopback etcd`);
    }
    // As etcd, before anything is evaluated: at most MAX_TXN_OPS of each, and in each branch no
    // key put twice, nor put and deleted (deletes may overlap each other), no empty key put.
    if (compares.length > MAX_TXN_OPS || success.length > MAX_TXN_OPS || failure.length > MAX_TXN_OPS) {
      throw new Refusal(INVALID_ARGUMENT, 'etcdserver: too many operations in txn request');
    }
    const branches = [success.map(requestOp), failure.map(requestOp)];
    for (const ops of branches) {
      const puts = ops.flatMap((o) => (o.kind === 'put' ? [o.key] : []));
      const dels = ops.flatMap((o) => (o.kind === 'delete' ? [o] : []));
      const inDel = (k: string): boolean => dels.some((d) => inRange(k, d.key, d.end));
      if (puts.includes('')) throw new Refusal(INVALID_ARGUMENT, 'etcdserver: key is not provided');
      if (new Set(puts).size !== puts.length || puts.some(inDel)) throw new Refusal(INVALID_ARGUMENT, 'etcdserver: duplicate key given in txn request');
    }
    const succeeded = compares.every((c) => this.#holds(c));
    const ops = branches[succeeded ? 0 : 1]!;
    // What the writes will keep, refused before any is applied.
    let bytes = 0;
    for (const o of ops) {
      if (o.kind === 'put') bytes += ENTRY_OVERHEAD_BYTES + o.key.length + o.value.length;
      else if (o.kind === 'delete') for (const { key } of this.#select(o.key, o.end, this.#rev)) bytes += ENTRY_OVERHEAD_BYTES + key.length;
    }
    if (this.#stored + bytes > this.#limits.maxStoredBytes) {
      throw new Refusal(RESOURCE_EXHAUSTED, `the loopback etcd keeps at most ${this.#limits.maxStoredBytes} bytes`);
    }
    this.#stored += bytes;
    const next = this.#rev + 1;
    const logged = this.#log.length;
    let changed = false;
    // Each op's response once the txn's revision is known: etcd gives the ops' own headers that revision only.
    const responses: ((rev: number) => ProtoWriter)[] = [];
    for (const op of ops) {
      if (op.kind === 'range') {
        // Reads in the txn see its writes before them, at the txn's revision.
        const read = this.#select(op.key, op.end, changed ? next : this.#rev);
        responses.push((rev) => new ProtoWriter().bytes(1, rangeResponse(new ProtoWriter().varint(3, rev), read, op.limit, op.countOnly)));
      } else if (op.kind === 'put') {
        const prev = this.#at(op.key, changed ? next : this.#rev);
        this.#push(op.key, { rev: next, value: op.value, create: prev?.create ?? next, version: (prev?.version ?? 0) + 1 });
        changed = true;
        responses.push((rev) => new ProtoWriter().bytes(2, new ProtoWriter().bytes(1, new ProtoWriter().varint(3, rev))));
      } else {
        const gone = this.#select(op.key, op.end, changed ? next : this.#rev);
        for (const { key } of gone) this.#push(key, { rev: next, value: undefined, create: 0, version: 0 });
        changed ||= gone.length > 0;
        const deleted = gone.length;
        responses.push((rev) => new ProtoWriter().bytes(3, new ProtoWriter().bytes(1, new ProtoWriter().varint(3, rev)).varint(2, deleted)));
      }
    }
    if (changed) {
      this.#rev = next;
      if (this.#watchers.size > 0) {
        const changes = this.#log.slice(logged);
        for (const w of this.#watchers) this.#send(w, next, changes);
      }
    }
    const w = new ProtoWriter().bytes(1, this.#header()).varint(2, succeeded);
    for (const r of responses) w.bytes(3, r(this.#rev));
    return w;
  }

  /**
   * A Watch stream: each create request registers a watcher (its id the stream's count of them),
   * answered `created`, then the events of its range from `start_revision` (the history kept, in
   * the order written), then every later txn's as it commits, one response per revision. A
   * cancel request, or the stream's end, removes them; another request ends the stream with its
   * gRPC status in the trailers (INVALID_ARGUMENT, UNIMPLEMENTED; RESOURCE_EXHAUSTED past
   * MAX_WATCHERS).
   */
  #watchStream(stream: ServerHttp2Stream): void {
    const frames = new GrpcFrames(MAX_REQUEST_BYTES);
    const mine: Watcher[] = [];
    let ids = 0;
    let status: { code: number; message: string } | undefined;
    // Ends the stream (once) with `code` in its trailers.
    const end = (code: number, message: string): void => {
      for (const w of mine) this.#watchers.delete(w);
      if (status !== undefined || stream.destroyed || stream.closed) return;
      status = { code, message };
      stream.end();
    };
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.once('wantTrailers', () => {
      const t = status ?? { code: 0, message: '' };
      stream.sendTrailers({ 'grpc-status': String(t.code), ...(t.message ? { 'grpc-message': encodeURIComponent(t.message) } : {}) });
    });
    stream.on('error', () => end(0, ''));
    stream.on('close', () => end(0, ''));
    stream.on('end', () => end(0, ''));
    stream.on('data', (chunk: Buffer) => {
      if (status !== undefined) return;
      try {
        for (const m of frames.push(chunk)) {
          const [f, ...rest] = [...protoFields(m)];
          if (f?.bytes === undefined || rest.length > 0) throw new Refusal(INVALID_ARGUMENT, 'a WatchRequest holds one request');
          if (f.no === 2) {
            // cancel_request: its watch_id
            const id = intOf([...protoFields(f.bytes)].find((g) => g.no === 1) ?? { no: 1, varint: '0' }, 'WatchCancelRequest.watch_id');
            const gone = mine.findIndex((w) => w.id === id);
            if (gone < 0) continue; // etcd answers nothing to a cancel of no watch of its
            this.#watchers.delete(mine[gone]!);
            mine.splice(gone, 1);
            stream.write(grpcFrame(new ProtoWriter().bytes(1, this.#header()).varint(2, id).varint(4, true).finish()));
            continue;
          }
          if (f.no !== 1) throw new Refusal(UNIMPLEMENTED, `WatchRequest field ${f.no} is not served by the loopback etcd`);
          if (this.#watchers.size >= this.#limits.maxWatchers) {
            throw new Refusal(RESOURCE_EXHAUSTED, `the loopback etcd serves at most ${this.#limits.maxWatchers} watchers`);
          }
          const w: Watcher = { stream, id: ids++, key: '', end: undefined, start: 0, close: end };
          let start = 0;
          for (const g of protoFields(f.bytes)) {
            if (g.no === 1) w.key = bytesOf(g, 'WatchCreateRequest.key');
            else if (g.no === 2) w.end = bytesOf(g, 'WatchCreateRequest.range_end') || undefined;
            else if (g.no === 3) w.start = start = intOf(g, 'WatchCreateRequest.start_revision');
            else if (g.no !== 4 && g.no !== 8) throw new Refusal(UNIMPLEMENTED, `WatchCreateRequest field ${g.no} is not served by the loopback etcd`);
          }
          mine.push(w);
          stream.write(grpcFrame(new ProtoWriter().bytes(1, this.#header()).varint(2, w.id).varint(3, true).finish()));
          if (start > 0 && start <= this.#rev) {
            let from = this.#log.findIndex((c) => c.rev >= start);
            while (from >= 0 && from < this.#log.length) {
              const rev = this.#log[from]!.rev;
              let to = from;
              while (to < this.#log.length && this.#log[to]!.rev === rev) to++;
              this.#send(w, rev, this.#log.slice(from, to));
              from = to;
            }
          }
          this.#watchers.add(w);
        }
      } catch (e) {
        end(e instanceof Refusal ? e.code : INVALID_ARGUMENT, (e as Error).message);
      }
    });
  }

  /** `changes` (all of revision `rev`) of `w`'s range, as one WatchResponse (none when none is). */
  #send(w: Watcher, rev: number, changes: readonly Change[]): void {
    if (rev < w.start) return; // a watch from a revision still to come
    const events = changes.filter((c) => inRange(c.key, w.key, w.end));
    if (events.length === 0 || w.stream.destroyed || w.stream.writableEnded) return;
    const r = new ProtoWriter().bytes(1, this.#header()).varint(2, w.id);
    for (const c of events) {
      const e = new ProtoWriter().varint(1, c.v.value === undefined ? 1 : 0);
      // A delete's kv: the key and the revision of the delete.
      r.bytes(
        11,
        e.bytes(
          2,
          c.v.value === undefined
            ? new ProtoWriter().bytes(1, Buffer.from(c.key, 'latin1')).varint(3, rev)
            : keyValue(c.key, c.v as Version & { value: Buffer }),
        ),
      );
    }
    w.stream.write(grpcFrame(r.finish()));
    // A client that does not read is not buffered for without end.
    if (w.stream.writableLength > WATCH_BUFFER_BYTES) w.close(RESOURCE_EXHAUSTED, `a watch stream left over ${WATCH_BUFFER_BYTES} bytes unread`);
  }

  #push(key: string, v: Version): void {
    this.#log.push({ rev: v.rev, key, v });
    const versions = this.#keys.get(key);
    if (versions === undefined) this.#keys.set(key, [v]);
    else versions.push(v);
  }

  /** Whether Compare `buf` holds now. */
  #holds(buf: Buffer): boolean {
    let result = 0;
    let target = 0;
    let key = '';
    let operand = 0;
    for (const f of protoFields(buf)) {
      if (f.no === 1) result = intOf(f, 'Compare.result');
      else if (f.no === 2) target = intOf(f, 'Compare.target');
      else if (f.no === 3) key = bytesOf(f, 'Compare.key');
      else if (f.no === 4 || f.no === 5 || f.no === 6) operand = intOf(f, 'Compare.target_union');
      else throw new Refusal(UNIMPLEMENTED, `Compare field ${f.no} is not served by the loopback etcd`);
    }
    const v = this.#at(key, this.#rev);
    // VERSION, CREATE, MOD: an absent key's are 0.
    const actual = target === 0 ? (v?.version ?? 0) : target === 1 ? (v?.create ?? 0) : target === 2 ? (v?.rev ?? 0) : undefined;
    if (actual === undefined) throw new Refusal(UNIMPLEMENTED, `Compare target ${target} is not served by the loopback etcd`);
    if (result === 0) return actual === operand;
    if (result === 1) return actual > operand;
    if (result === 2) return actual < operand;
    if (result === 3) return actual !== operand;
    throw new Refusal(INVALID_ARGUMENT, `Compare result ${result} is not one of etcd's`);
  }
}
