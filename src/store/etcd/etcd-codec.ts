/**
 * How Store keys and values travel through etcd's JSON gateway: every key lives under ROOT,
 * keys and values are base64 of their UTF-8 bytes, int64 fields arrive as decimal strings,
 * and fields holding their zero value are left out of the JSON.
 */
import { StoreError } from '../errors.js';
import type { Entry } from '../store.js';

/** The part of etcd's key space podipam owns; Store keys are relative to it. */
export const ROOT = '/podipam/';

/** The wire form of an etcd mvccpb.KeyValue as the gateway prints it. */
export interface WireKv {
  readonly key?: string;
  readonly value?: string;
  readonly mod_revision?: string;
}

/** UTF-8 bytes of `ROOT + key`. */
export function rootedBytes(key: string): Buffer {
  return Buffer.from(ROOT + key, 'utf8');
}

/** The first key after every key that starts with `prefix` (etcd's range_end for a prefix). */
export function prefixRangeEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if ((end[i] as number) < 0xff) {
      end[i] = (end[i] as number) + 1;
      return end.subarray(0, i + 1);
    }
  }
  // Only for a prefix of 0xff bytes, never for one under ROOT: "\0" means "to the end".
  return Buffer.from([0]);
}

/** An int64 the gateway sent as a string (absent = 0), as a number; StoreError if unsafe. */
export function wireInt(url: string, field: string, value: unknown): number {
  const n = value === undefined ? 0 : Number(value);
  if (!Number.isSafeInteger(n) || n < 0) {
    throw new StoreError(url, `etcd sent ${field} ${JSON.stringify(value)}, which is not a revision podipam can use`);
  }
  return n;
}

/** A gateway KeyValue as a Store entry, its key made relative to ROOT. */
export function decodeKv(url: string, kv: WireKv): Entry {
  const key = Buffer.from(kv.key ?? '', 'base64').toString('utf8');
  if (!key.startsWith(ROOT)) {
    throw new StoreError(url, `etcd returned key ${JSON.stringify(key)} outside ${ROOT}`);
  }
  return {
    key: key.slice(ROOT.length),
    value: Buffer.from(kv.value ?? '', 'base64').toString('utf8'),
    rev: wireInt(url, 'mod_revision', kv.mod_revision),
  };
}
