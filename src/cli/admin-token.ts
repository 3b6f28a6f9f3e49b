/**
 * The token a CLI client of `podipam serve` sends for writes, found without a command-line
 * argument (which every local user can read in /proc/PID/cmdline): $PODIPAM_ADMIN_TOKEN, else
 * the per-install token serve wrote into its data directory (DIR/serve.token, readable only
 * by serve's user). A token given on the command line still works, with a warning.
 */
import { join } from 'node:path';
import { INSTALL_TOKEN_FILE, readInstallToken } from '../server/http/install-token.js';

export interface FoundToken {
  readonly token: string | undefined;
  /** Where it came from, for messages (never the token itself). */
  readonly source: string;
}

/** Says why a token on the command line is a bad idea and what to do instead. */
export function commandLineTokenWarning(flag: string, dataDir: string): string {
  return (
    `podipam: warning: the token in ${flag} is visible to every local user in /proc/PID/cmdline; ` +
    `leave it out: it is read from ${join(dataDir, INSTALL_TOKEN_FILE)} or $PODIPAM_ADMIN_TOKEN\n`
  );
}

/**
 * The token to use: `given` (from the command line) when present, else $PODIPAM_ADMIN_TOKEN,
 * else DIR/serve.token when it exists (created by serve; never created here), else none.
 * Throws naming the file when it exists but is not private or not one token.
 */
export function findAdminToken(given: string | undefined, dataDir: string, env: NodeJS.ProcessEnv = process.env): FoundToken {
  if (given) return { token: given, source: 'the command line' };
  if (env.PODIPAM_ADMIN_TOKEN) return { token: env.PODIPAM_ADMIN_TOKEN, source: '$PODIPAM_ADMIN_TOKEN' };
  const file = join(dataDir, INSTALL_TOKEN_FILE);
  const token = readInstallToken(dataDir);
  return token === undefined ? { token: undefined, source: `no token (${file} does not exist, $PODIPAM_ADMIN_TOKEN is not set)` } : { token, source: file };
}
