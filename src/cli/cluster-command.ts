/**
 * Shared plumbing for the cluster command groups (`pool`, `ipam`): open the datastore named
 * by --datastore / $PODIPAM_DATASTORE, run the service, close in `finally`; bad input from
 * the command line (TypeError/RangeError from validation) becomes a UsageError (exit 2).
 */
import type { Command } from 'commander';
import type { ClusterIpam } from '../cluster/index.js';
import { datastoreUrl } from './datastore-url.js';
import { UsageError } from './usage-error.js';

/** Opens the store, runs `fn` with a ClusterIpam on it, closes the store whatever happens. */
export async function withClusterIpam<T>(cmd: Command, fn: (ipam: ClusterIpam) => Promise<T>): Promise<T> {
  const [{ openStore }, { ClusterIpam }] = await Promise.all([import('../store/index.js'), import('../cluster/index.js')]);
  const store = await openStore(datastoreUrl(cmd));
  try {
    return await fn(new ClusterIpam(store));
  } catch (e) {
    throw e instanceof TypeError || e instanceof RangeError ? new UsageError(e.message) : e;
  } finally {
    await store.close();
  }
}

/** Runs a parser of command-line input, turning its TypeError/RangeError into a UsageError. */
export function usage<T>(fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    throw e instanceof TypeError || e instanceof RangeError ? new UsageError(e.message) : e;
  }
}

/** Parses a decimal integer option; UsageError naming the option and value. */
export function intOption(name: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  if (!/^-?[0-9]+$/.test(text)) throw new UsageError(`invalid ${name} ${JSON.stringify(text)}: not an integer`);
  return Number(text);
}

/** Parses "true"/"false"; UsageError naming the option and value. */
export function boolOption(name: string, text: string | undefined): boolean | undefined {
  if (text === undefined) return undefined;
  if (text === 'true') return true;
  if (text === 'false') return false;
  throw new UsageError(`invalid ${name} ${JSON.stringify(text)}: use true or false`);
}
