/**
 * What a transaction of an ADD's shape costs the etcd members (CPU ms per txn, all members,
 * from /proc) and the client (this process), by shape: one ADD (a block put, a handle put, the
 * history stamp; compares on `config`, the block and the handle) with a block record of
 * BLOCK_BYTES or SMALL_BYTES, and four ADDs in one transaction (as a group commit writes them).
 * It separates the fixed cost of a transaction (request, raft round, apply) from the cost of its
 * bytes, which decides between fewer transactions and smaller records. Writes only under
 * `txn-cost/`; each shape runs `n` transactions one after the other.
 */
import type { Op, Store } from '../../src/store/index.js';
import { cpuMs } from './proc-cpu.js';

/** A full /26 of Multus attachments (64 handles of ~80 characters) is about this big in JSON. */
export const BLOCK_BYTES = 3400;
export const SMALL_BYTES = 300;

export interface TxnCost {
  readonly shape: string;
  /** CPU ms per txn of all the members together. */
  readonly etcdMs: number;
  /** CPU ms per txn of this process (the client's encode, HTTP, decode). */
  readonly clientMs: number;
  /** Wall ms per txn (one at a time). */
  readonly wallMs: number;
}

/** Runs every shape `n` times against `store`, the members' pids in `etcdPids`. */
export async function etcdTxnCost(store: Store, etcdPids: readonly number[], n: number): Promise<TxnCost[]> {
  const revs = new Map<string, number>();
  const etcdCpu = (): number => etcdPids.reduce((t, p) => t + cpuMs(p), 0);
  const shape = async (name: string, adds: number, bytes: number): Promise<TxnCost> => {
    const value = 'x'.repeat(bytes);
    const c0 = etcdCpu();
    const a0 = cpuMs(process.pid);
    const t0 = performance.now();
    for (let i = 0; i < n; i++) {
      const keys = ['txn-cost/config'];
      const ops: Op[] = [];
      for (let b = 0; b < adds; b++) {
        ops.push({ type: 'put', key: `txn-cost/blocks/${b}-${i % 8}`, value });
        ops.push({ type: 'put', key: `txn-cost/handles/${name}-${i}-${b}`, value: 'h'.repeat(SMALL_BYTES) });
      }
      keys.push(...ops.map((o) => o.key));
      ops.push({ type: 'put', key: 'txn-cost/stamp', value: `{"at":${Date.now()}}` });
      const r = await store.txn(
        keys.map((key) => ({ key, rev: revs.get(key) ?? 0 })),
        ops,
      );
      if (!r.succeeded) throw new Error(`txn cost ${name}: a compare failed (another writer under txn-cost/?)`);
      for (const o of ops) revs.set(o.key, r.rev);
    }
    const wall = performance.now() - t0;
    return { shape: name, etcdMs: (etcdCpu() - c0) / n, clientMs: (cpuMs(process.pid) - a0) / n, wallMs: wall / n };
  };
  const out: TxnCost[] = [];
  // Twice through, alternating, so that a burst of the machine's other load hits both.
  for (let round = 0; round < 2; round++) {
    out.push(await shape(`1 ADD, ${BLOCK_BYTES} B block`, 1, BLOCK_BYTES));
    out.push(await shape(`1 ADD, ${SMALL_BYTES} B block`, 1, SMALL_BYTES));
    out.push(await shape(`4 ADDs, ${BLOCK_BYTES} B blocks`, 4, BLOCK_BYTES));
    out.push(await shape(`4 ADDs, ${SMALL_BYTES} B blocks`, 4, SMALL_BYTES));
  }
  return out;
}
