/**
 * An errno a native addon reported, as the Error node:fs would have thrown for it: message
 * `<CODE>: <libuv's description>, <syscall> '<path>'` (` -> '<dest>'` for two paths), with
 * `code`, `errno` (negative, as Node's), `syscall`, `path` and `dest` — so callers and their
 * messages do not tell which of the two did the I/O. A system call on a descriptor (write,
 * close…) has no `path`, as node:fs's has none.
 */
import { os } from './builtins.js';

export function errnoError(errno: number, syscall: string, path?: string, dest?: string): NodeJS.ErrnoException {
  // node:util only here, on the error path (not at every plugin start); without it (Node.js
  // before 20.16) the code's name from os.constants and no description.
  const util = process.getBuiltinModule?.('node:util');
  const [code, description] = util?.getSystemErrorMap().get(-errno) ?? [
    Object.entries(os.constants.errno).find(([, n]) => n === errno)?.[0] ?? `E${errno}`,
    `errno ${errno}`,
  ];
  const where = path === undefined ? '' : dest === undefined ? ` '${path}'` : ` '${path}' -> '${dest}'`;
  const e: NodeJS.ErrnoException = new Error(`${code}: ${description}, ${syscall}${where}`);
  e.code = code;
  e.errno = -errno;
  e.syscall = syscall;
  if (path !== undefined) e.path = path;
  if (dest !== undefined) (e as { dest?: string }).dest = dest;
  return e;
}
