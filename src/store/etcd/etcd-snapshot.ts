import { createHash } from 'node:crypto';
import { closeSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { StoreError } from '../errors.js';
import type { EtcdGateway } from './etcd-gateway.js';

/** How long the snapshot stream may stay silent before it is given up (a big database streams for a while, but never pauses long). */
const SNAPSHOT_SILENCE_MS = 30_000;

interface SnapshotMessage {
  readonly result?: { readonly remaining_bytes?: string; readonly blob?: string };
  readonly error?: { readonly message?: string; readonly code?: number };
}

/**
 * Streams etcd's Maintenance Snapshot (`/v3/maintenance/snapshot`, one JSON message per chunk
 * with a base64 `blob` and `remaining_bytes`) from the member the gateway prefers into
 * `file`: written to `file.partial-PID`, fsynced, renamed into place only once the last chunk
 * and the stream's end, so a broken stream never leaves a file that looks whole. The bytes
 * are those `etcdctl snapshot save` writes: the bbolt database chunks (the last one with
 * `remaining_bytes` 0), then one message with its SHA-256, which is checked here as
 * `etcdutl snapshot restore` will. Rejects with StoreError naming the member
 * and what broke; StoreUnavailableError when it cannot be reached.
 */
export async function saveEtcdSnapshot(url: string, gateway: EtcdGateway, file: string): Promise<{ bytes: number; endpoint: string }> {
  const stream = await gateway.openStream('maintenance/snapshot', {}, gateway.preferred);
  const partial = `${file}.partial-${process.pid}`;
  let fd: number;
  try {
    fd = openSync(partial, 'wx', 0o600);
  } catch (e) {
    stream.request.destroy();
    throw new StoreError(url, `cannot write ${partial}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, { cause: e });
  }
  let bytes = 0;
  try {
    await new Promise<void>((resolve, reject) => {
      let pending = '';
      let lastChunk = false; // a chunk with remaining_bytes 0 came: only the SHA-256 follows
      let held: Buffer | undefined; // the newest blob: the SHA-256 if the stream ends after it
      const hash = createHash('sha256');
      const fail = (why: string) => {
        clearTimeout(silence);
        stream.request.destroy();
        reject(new StoreError(url, `the snapshot from ${stream.endpoint} broke: ${why}`));
      };
      let silence = setTimeout(() => fail(`no data for ${SNAPSHOT_SILENCE_MS} ms`), SNAPSHOT_SILENCE_MS);
      const res = stream.response;
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        clearTimeout(silence);
        silence = setTimeout(() => fail(`no data for ${SNAPSHOT_SILENCE_MS} ms`), SNAPSHOT_SILENCE_MS);
        pending += chunk;
        for (let nl = pending.indexOf('\n'); nl >= 0; nl = pending.indexOf('\n')) {
          const line = pending.slice(0, nl).trim();
          pending = pending.slice(nl + 1);
          if (line === '') continue;
          let msg: SnapshotMessage;
          try {
            msg = JSON.parse(line) as SnapshotMessage;
          } catch {
            fail(`an answer that is not JSON: ${line.slice(0, 100)}`);
            return;
          }
          if (msg.error !== undefined) {
            fail(`etcd: ${msg.error.message ?? JSON.stringify(msg.error)}`);
            return;
          }
          const blob = Buffer.from(msg.result?.blob ?? '', 'base64');
          if (held !== undefined) hash.update(held);
          held = blob;
          writeSync(fd, blob);
          bytes += blob.length;
          // proto3 JSON leaves a zero remaining_bytes out
          if (msg.result?.remaining_bytes === undefined || msg.result.remaining_bytes === '0') lastChunk = true;
        }
      });
      res.on('error', (e: NodeJS.ErrnoException) => fail(e.code ?? e.message));
      res.on('end', () => {
        clearTimeout(silence);
        if (pending.trim() !== '') {
          fail('the stream ended inside a message');
          return;
        }
        if (!lastChunk || held === undefined) {
          fail(`the stream ended after ${bytes} bytes, before the last chunk`);
          return;
        }
        const sum = hash.digest();
        if (!sum.equals(held)) {
          fail(`the database's SHA-256 is ${sum.toString('hex')}, etcd's last message ${held.toString('hex')}: the stream ended early or was garbled`);
          return;
        }
        resolve();
      });
    });
    fsyncSync(fd);
    closeSync(fd);
    renameSync(partial, file);
    return { bytes, endpoint: stream.endpoint };
  } catch (e) {
    try {
      closeSync(fd);
    } catch {
      // already closed
    }
    rmSync(partial, { force: true });
    throw e;
  }
}
