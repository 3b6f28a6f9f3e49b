/**
 * The worker thread behind `CheckInWorker` (check-in-worker.ts): opens its own connection to
 * the datastore the URL names, runs `ipam check` (the same `ClusterIpam.check()` the CLI
 * runs), posts the report or the error, closes the store and ends. Nothing else imports it.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { ClusterIpam } from '../../cluster/index.js';
import { openStore } from '../../store/index.js';

export interface CheckWorkerData {
  readonly url: string;
}

/** What the worker posts: the report, or the error's name, message and the fields the HTTP mapping reads. */
export type CheckWorkerReply =
  | { readonly ok: true; readonly report: import('../../cluster/index.js').CheckReport }
  | { readonly ok: false; readonly name: string; readonly message: string; readonly code?: unknown; readonly field?: unknown; readonly stack?: string };

const { url } = workerData as CheckWorkerData;
let reply: CheckWorkerReply;
try {
  const store = await openStore(url);
  try {
    reply = { ok: true, report: await new ClusterIpam(store).check() };
  } finally {
    await store.close();
  }
} catch (e) {
  const err = e instanceof Error ? e : new Error(String(e));
  const { code, field } = err as { code?: unknown; field?: unknown };
  reply = { ok: false, name: err.name, message: err.message, code, field, ...(err.stack ? { stack: err.stack } : {}) };
}
parentPort?.postMessage(reply);
