/** The logger of a long-running command, from the global --log-level / --log-format flags. */
import type { Command } from 'commander';
import type { Logger } from '../log/logger.js';
import { UsageError } from './usage-error.js';

export async function cliLogger(cmd: Command, component: string): Promise<Logger> {
  const { createLogger, parseLogOptions } = await import('../log/logger.js');
  const g = cmd.optsWithGlobals<{ logLevel?: string; logFormat?: string }>();
  try {
    const o = parseLogOptions(g.logLevel ?? process.env.PODIPAM_LOG_LEVEL ?? 'info', g.logFormat ?? process.env.PODIPAM_LOG_FORMAT ?? 'text');
    return createLogger({ ...o, component });
  } catch (e) {
    throw new UsageError((e as Error).message, { cause: e });
  }
}
