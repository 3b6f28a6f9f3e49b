/**
 * The per-install token of `podipam serve` on loopback without configured tokens: generated at
 * first start into the data directory (mode 0600), printed with the dashboard URL as
 * `http://127.0.0.1:7420/?token=…` for the browser (as notebook servers do), and required for
 * every mutating call. A web page the operator has open cannot read the file, so it cannot
 * write to the API; local clients (`podipam simulate`) read the file themselves.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { readSecretFile } from './secret-file.js';

/** The token file's name inside the data directory. */
export const INSTALL_TOKEN_FILE = 'serve.token';

const TOKEN = /^[A-Za-z0-9_-]{16,256}$/;

/**
 * Returns the token in `<dataDir>/serve.token`, creating the directory (0700) and the file
 * (0600, 32 random bytes in base64url) when it does not exist. Throws naming the file when it
 * is readable by group/other, not a regular file, or does not hold one token.
 */
export function loadInstallToken(dataDir: string): string {
  const path = join(dataDir, INSTALL_TOKEN_FILE);
  try {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  } catch (e) {
    throw new Error(`cannot create the data directory ${dataDir} for ${INSTALL_TOKEN_FILE}: ${(e as Error).message}`, { cause: e });
  }
  const token = randomBytes(32).toString('base64url');
  let fd: number | undefined;
  try {
    // 'wx': never overwrite (or follow a planted symlink to) an existing file.
    fd = openSync(path, 'wx', 0o600);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw new Error(`cannot create the install token ${path}: ${(e as Error).message}`, { cause: e });
  }
  if (fd !== undefined) {
    try {
      writeSync(fd, `${token}\n`);
    } finally {
      closeSync(fd);
    }
    return token;
  }
  return readTokenFile(path);
}

/**
 * The token in `<dataDir>/serve.token`, or undefined when there is none; creates nothing (what
 * clients such as `podipam simulate` read, so no token has to be given on a command line,
 * where every local user sees it in /proc/PID/cmdline). Throws as loadInstallToken does for
 * a file that is readable by group/other or does not hold one token.
 */
export function readInstallToken(dataDir: string): string | undefined {
  const path = join(dataDir, INSTALL_TOKEN_FILE);
  if (!existsSync(path)) return undefined;
  return readTokenFile(path);
}

function readTokenFile(path: string): string {
  const text = readSecretFile('the install token', path).trim();
  if (!TOKEN.test(text))
    throw new Error(
      `the install token ${path} must hold one token of 16-256 letters, digits, "-" and "_" (its content is not shown); delete it to have a new one generated`,
    );
  return text;
}
