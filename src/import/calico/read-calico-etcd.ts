/**
 * Reads Calico's IPAM keys from its etcd v3 datastore (I/O, read-only): every key under
 * `<prefix>` + each of CALICO_ETCD_PREFIXES, through EtcdRawReader (src/store/etcd), which can
 * only range-read. The pairs go to parseCalicoEtcd.
 */
import { EtcdRawReader } from '../../store/etcd/etcd-raw-reader.js';
import type { StoreOptions } from '../../store/index.js';
import { CALICO_ETCD_DEFAULT_PREFIX, CALICO_ETCD_PREFIXES, type EtcdPair } from './parse-calico-etcd.js';

/** Calico's pairs from the etcd cluster `url` names (`etcd://…` / `etcds://…`). */
export async function readCalicoEtcdPairs(url: string, prefix: string = CALICO_ETCD_DEFAULT_PREFIX, options?: StoreOptions): Promise<EtcdPair[]> {
  const reader = await EtcdRawReader.open(url, options);
  try {
    const root = prefix.replace(/\/+$/, '');
    const out: EtcdPair[] = [];
    for (const p of CALICO_ETCD_PREFIXES) out.push(...(await reader.list(root + p)));
    return out;
  } finally {
    reader.close();
  }
}
