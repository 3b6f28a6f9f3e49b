/**
 * The agent's socket path before it listens: the directory checked (or created 0700), the
 * `<socket>.lock` flock taken for the agent's life (opened without following a symbolic link), a
 * killed agent's stale socket removed. Refusals are AgentStartErrors naming the path.
 */
import { closeSync, constants, fstatSync, ftruncateSync, lstatSync, mkdirSync, openSync, unlinkSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { tryLockExclusive } from '../util/flock.js';
import { AgentStartError } from './agent-start-error.js';

/** Checks the socket's directory, takes `<socket>.lock`, removes a stale socket; returns the lock's fd. */
export function prepareSocketPath(socket: string): number {
  if (!socket.startsWith('/')) throw new AgentStartError(`--socket ${JSON.stringify(socket)}: must be an absolute path`);
  if (Buffer.byteLength(socket) > 107) throw new AgentStartError(`--socket ${JSON.stringify(socket)}: longer than the 107 bytes a unix socket path may have`);
  const dir = dirname(socket);
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (e) {
    throw new AgentStartError(`cannot create the socket directory ${dir}: ${(e as Error).message}`, { cause: e });
  }
  const st = lstatSync(dir);
  if (!st.isDirectory()) throw new AgentStartError(`socket directory ${dir} is not a directory (a symbolic link?): refusing it`);
  const me = process.getuid?.() ?? 0;
  if (st.uid !== 0 && st.uid !== me) {
    throw new AgentStartError(`socket directory ${dir} belongs to uid ${st.uid}, not root or uid ${me}: its owner could replace the socket`);
  }
  if ((st.mode & 0o022) !== 0) {
    throw new AgentStartError(
      `socket directory ${dir} is writable by group or others (mode ${(st.mode & 0o777).toString(8)}): use a private directory (0700 or 0755)`,
    );
  }
  const lockPath = `${socket}.lock`;
  const fd = openLockFile(lockPath);
  if (!tryLockExclusive(fd)) {
    closeSync(fd);
    throw new AgentStartError(`another podipam agent is serving ${socket} (it holds ${lockPath})`);
  }
  ftruncateSync(fd, 0);
  writeSync(fd, `${process.pid}\n`, 0);
  let existing;
  try {
    existing = lstatSync(socket);
  } catch {
    return fd;
  }
  if (!existing.isSocket()) {
    closeSync(fd);
    throw new AgentStartError(`${socket} exists and is not a socket: refusing to replace it`);
  }
  unlinkSync(socket); // a killed agent's socket: nobody holds the lock, so nobody serves it
  return fd;
}

/**
 * Opens (creating, 0600) the lock file without following a symbolic link or blocking on a FIFO
 * someone planted there: the agent truncates it and writes its pid, so a link would make it
 * overwrite any file root can write. Anything but a regular file is refused, naming it.
 */
function openLockFile(path: string): number {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK, 0o600); // Node adds O_CLOEXEC itself
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ELOOP')
      throw new AgentStartError(`${path} is a symbolic link: refusing to follow it (remove it; the agent creates its own lock file)`, { cause: e });
    throw new AgentStartError(`cannot open ${path}: ${(e as Error).message}`, { cause: e });
  }
  if (!fstatSync(fd).isFile()) {
    closeSync(fd);
    throw new AgentStartError(`${path} is not a regular file: refusing it (remove it; the agent creates its own lock file)`);
  }
  return fd;
}
