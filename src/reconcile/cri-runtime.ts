/**
 * A client of the container runtime's CRI endpoint (the socket kubelet talks to), for the two
 * calls runtime reconciliation makes: `Version` and `ListPodSandbox` with no filter (every
 * sandbox, whatever its state). gRPC over the unix socket with @grpc/grpc-js; the messages are
 * cri-messages.ts's. Every call has a deadline; a call that fails, times out or answers
 * something that does not decode rejects (CriCallError with the gRPC code): never a partial list.
 */
import { createRequire } from 'node:module';
import { CriDecodeError, type CriSandbox, type CriVersion, decodeListPodSandboxResponse, decodeVersionResponse } from './cri-messages.js';

export type { CriSandbox, CriVersion } from './cri-messages.js';

const SERVICE = '/runtime.v1.RuntimeService';
/** kubelet's own limit for CRI answers (16 MiB): a node with many sandboxes still fits. */
const MAX_ANSWER_BYTES = 16 << 20;

/** A CRI call did not give a usable answer: `code` is gRPC's status code (14 UNAVAILABLE, 4 DEADLINE_EXCEEDED, …) when it has one. */
export class CriCallError extends Error {
  override readonly name = 'CriCallError';
  constructor(
    readonly method: string,
    readonly code: number | undefined,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export interface CriRuntime {
  version(): Promise<CriVersion>;
  /** Every sandbox the runtime has (all states), in one complete answer. */
  listPodSandbox(): Promise<CriSandbox[]>;
  close(): void;
}

/**
 * The socket path of a CRI endpoint as kubelet's `--container-runtime-endpoint` names it
 * (`unix:///run/containerd/containerd.sock`) or a bare absolute path; RangeError naming `field`
 * and the value for anything else.
 */
export function criSocketPath(field: string, endpoint: string): string {
  const path = endpoint.startsWith('unix://') ? endpoint.slice('unix://'.length) : endpoint;
  if (!path.startsWith('/') || path.includes('\0') || path.length > 107) {
    throw new RangeError(`invalid ${field} ${JSON.stringify(endpoint)}: expected unix:///absolute/path/to/runtime.sock (at most 107 bytes)`);
  }
  return path;
}

interface GrpcClient {
  makeUnaryRequest<Q, R>(
    method: string,
    ser: (q: Q) => Buffer,
    de: (b: Buffer) => R,
    arg: Q,
    options: { deadline: number },
    cb: (e: (Error & { code?: number; details?: string }) | null, r?: R) => void,
  ): unknown;
  close(): void;
}
interface GrpcModule {
  Client: new (address: string, creds: unknown, options: Record<string, unknown>) => GrpcClient;
  credentials: { createInsecure(): unknown };
}

/** A client of the runtime at `socket` (an absolute path); each call gives up after `timeoutMs`. */
export function criRuntime(socket: string, timeoutMs = 10_000): CriRuntime {
  const grpc = createRequire(import.meta.url)('@grpc/grpc-js') as GrpcModule;
  const client = new grpc.Client(`unix://${socket}`, grpc.credentials.createInsecure(), { 'grpc.max_receive_message_length': MAX_ANSWER_BYTES });
  const empty = (): Buffer => Buffer.alloc(0);
  const call = <R>(method: string, decode: (b: Buffer) => R): Promise<R> =>
    new Promise((resolve, reject) => {
      client.makeUnaryRequest(`${SERVICE}/${method}`, empty, decode, {}, { deadline: Date.now() + timeoutMs }, (e, r) => {
        if (e) {
          const decodeError = e instanceof CriDecodeError || (e as { cause?: unknown }).cause instanceof CriDecodeError;
          reject(
            new CriCallError(method, e.code, `CRI ${method} on ${socket}: ${decodeError ? 'undecodable answer: ' : ''}${e.details || e.message}`, { cause: e }),
          );
        } else if (r === undefined) reject(new CriCallError(method, undefined, `CRI ${method} on ${socket}: no answer`));
        else resolve(r);
      });
    });
  return {
    version: () => call('Version', decodeVersionResponse),
    listPodSandbox: () => call('ListPodSandbox', decodeListPodSandboxResponse),
    close: () => client.close(),
  };
}
