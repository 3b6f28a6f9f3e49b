/**
 * `ipam check` off the server's event loop: each run is a worker thread (check-worker.ts)
 * with its own connection to the datastore, so a 150,000-pod check (seconds of decoding and
 * cross-referencing, and for SQLite seconds of synchronous reads) never delays /healthz or any
 * other request. The report is the one the in-process check gives. An error in the worker
 * comes back as an Error with the same name, message, `code` and `field`, so the HTTP error
 * mapping (http-error.ts) answers as it would in process. `close()` ends running checks.
 */
import { Worker } from 'node:worker_threads';
import type { CheckWorkerData, CheckWorkerReply } from './check-worker.js';
import type { CheckReport } from '../../cluster/index.js';

export class CheckInWorker {
  readonly #url: string;
  readonly #running = new Set<Worker>();
  #closed = false;

  /** `url`: the datastore URL with its credentials (the worker opens it as the server did). */
  constructor(url: string) {
    this.#url = url;
  }

  run(): Promise<CheckReport> {
    if (this.#closed) return Promise.reject(new Error('the check worker pool is closed'));
    const data: CheckWorkerData = { url: this.#url };
    const worker = new Worker(new URL('./check-worker.js', import.meta.url), { workerData: data });
    this.#running.add(worker);
    return new Promise<CheckReport>((resolve, reject) => {
      let replied = false;
      worker.once('message', (m: CheckWorkerReply) => {
        replied = true;
        if (m.ok) resolve(m.report);
        else reject(rebuild(m));
      });
      worker.once('error', (e) => {
        replied = true;
        reject(e);
      });
      worker.once('exit', (code) => {
        this.#running.delete(worker);
        if (!replied) reject(new Error(`ipam check: the check worker exited with code ${code} before answering${this.#closed ? ' (server closing)' : ''}`));
      });
    });
  }

  /** Stops every running check (their callers get an error). */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#running].map((w) => w.terminate()));
  }
}

function rebuild(m: Extract<CheckWorkerReply, { ok: false }>): Error {
  const e = new Error(m.message);
  Object.defineProperty(e, 'name', { value: m.name, enumerable: false, configurable: true, writable: true });
  if (m.code !== undefined) Object.assign(e, { code: m.code });
  if (m.field !== undefined) Object.assign(e, { field: m.field });
  if (m.stack !== undefined) e.stack = m.stack;
  return e;
}
