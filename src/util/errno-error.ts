/**
 * An errno a native addon reported, as the Error node:fs would have thrown for it: message
 * `<CODE>: <libuv's description>, <syscall> '<path>'` (` -> '<dest>'` for two paths), with
 * `code`, `errno` (negative, as Node's), `syscall`, `path` and `dest` — so callers and their
 * messages do not tell which of the two did the I/O. A system call on a descriptor (write,
 * close…) has no `path`, as node:fs's has none.
 */
import { util } from './builtins.js';

export function errnoError(errno: number, syscall: string, path?: string, dest?: string): NodeJS.ErrnoException {
  const [code, description] = util.getSystemErrorMap().get(-errno) ?? [`E${errno}`, `errno ${errno}`];
  const where = path === undefined ? '' : dest === undefined ? ` '${path}'` : ` '${path}' -> '${dest}'`;
  const e: NodeJS.ErrnoException = new Error(`${code}: ${description}, ${syscall}${where}`);
  e.code = code;
  e.errno = -errno;
  e.syscall = syscall;
  if (path !== undefined) e.path = path;
  if (dest !== undefined) (e as { dest?: string }).dest = dest;
  return e;
}
