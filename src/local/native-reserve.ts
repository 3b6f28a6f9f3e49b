/**
 * The reservation write of DiskStore.reserve in one native call (native/reserve-file.c): the
 * temporary file, its hard link to the address's name, `last_reserved_ip.N` — the same steps,
 * order and rules as the node:fs writer in disk-store.ts, which stays for what this one hands
 * back (no addon, no hard links, strings of 4 KiB and more) and while crash points are armed
 * (they name the steps between the node:fs calls). Failures are thrown as that writer throws
 * them: the refusal of a `last_reserved_ip.N` that is not a regular file, or a FileIoError
 * naming the action and the file, with node:fs's own message.
 */
import { tryLoadAddon } from '../util/native-addon.js';
import { errnoError } from '../util/errno-error.js';
import { crashPointsArmed } from '../util/crash-point.js';
import { ioError, notRegular, KIND_TEXT } from './regular-file.js';

type Failure = { action: string; path: string; kind: string } | { action: string; path: string; syscall: string; errno: number; dest?: string };

interface ReserveFileAddon {
  reserve(tmp: string, file: string, content: string, last: string, lastContent: string): 0 | 1 | 2 | 3 | Failure;
}

let addon: ReserveFileAddon | null | undefined;

/** The addon, or null (not built, or crash points armed): then node:fs writes. */
export function reserveAddon(): ReserveFileAddon | null {
  if (addon === undefined) addon = crashPointsArmed() ? null : tryLoadAddon<ReserveFileAddon>('reserve_file');
  return addon;
}

/** System calls on a descriptor: node:fs's error names no path for them. */
const ON_DESCRIPTOR = new Set(['write', 'fstat', 'ftruncate', 'close']);

/**
 * Writes the reservation through `native`: true reserved, false `file` exists (taken); the
 * caller writes it itself (nothing written) on 'no-links' (a file system without hard links:
 * node:fs writes in place) and 'too-long' (a string beyond the addon's buffers). Throws as the
 * node:fs writer does; nothing of the call is then left on disk.
 */
export function nativeReserve(
  native: ReserveFileAddon,
  tmp: string,
  file: string,
  content: string,
  last: string,
  lastContent: string,
): boolean | 'no-links' | 'too-long' {
  const r = native.reserve(tmp, file, content, last, lastContent);
  if (r === 0) return true;
  if (r === 1) return false;
  if (r === 2) return 'no-links';
  if (r === 3) return 'too-long';
  if ('kind' in r) throw notRegular(r.path, KIND_TEXT[r.kind] ?? 'not a regular file');
  const named = r.dest === undefined ? r.path : `${r.path} to ${r.dest}`;
  throw ioError(r.action, named, errnoError(r.errno, r.syscall, ON_DESCRIPTOR.has(r.syscall) ? undefined : r.path, r.dest));
}
