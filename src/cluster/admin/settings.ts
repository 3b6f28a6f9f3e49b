/**
 * IPAM settings (the `config` singleton) and reservations (`reservations/<name>`). Every
 * change bumps the config generation, so allocators see it on their next transaction.
 */
import { type Prefix, formatPrefix } from '../../ip/index.js';
import { configTxn } from '../txn/index.js';
import {
  MAX_RESERVATION_CIDRS,
  NotFoundError,
  type IpamConfig,
  MAX_BLOCKS_PER_HOST,
  decodeConfig,
  CONFIG_KEY,
  RESERVATION_PREFIX,
  reservationKey,
  type Reservation,
  decodeReservation,
  encodeReservation,
  parseReservedCidr,
} from '../records/index.js';
import type { IpamContext } from '../views/index.js';
import { checkResourceName } from '../../model/names.js';

export type IpamSettings = Omit<IpamConfig, 'generation'>;

/** The current settings (defaults when never written). */
export async function getSettings(ctx: IpamContext): Promise<IpamConfig> {
  return decodeConfig(await ctx.store.get(CONFIG_KEY));
}

/** Changes some settings; TypeError/RangeError naming a bad field. Returns the new settings. */
export async function updateSettings(ctx: IpamContext, patch: Partial<IpamSettings>): Promise<IpamConfig> {
  for (const f of ['strictAffinity', 'autoAllocateBlocks'] as const) {
    if (patch[f] !== undefined && typeof patch[f] !== 'boolean') throw new TypeError(`invalid ${f} ${JSON.stringify(patch[f])}: not a boolean`);
  }
  const m = patch.maxBlocksPerHost;
  if (m !== undefined && (!Number.isInteger(m) || m < 0 || m > MAX_BLOCKS_PER_HOST)) {
    throw new RangeError(`invalid maxBlocksPerHost ${JSON.stringify(m)}: an integer from 0 (unset) to ${MAX_BLOCKS_PER_HOST}`);
  }
  return configTxn(ctx, 'update IPAM settings', async (config) => {
    const next = { ...config, ...patch, generation: config.generation + 1 };
    return { compares: [], ops: [], config: { ...next, generation: config.generation }, result: next };
  });
}

/** Every reservation, by name. */
export async function listReservations(ctx: IpamContext): Promise<Reservation[]> {
  return (await ctx.store.list(RESERVATION_PREFIX)).map(decodeReservation);
}

/**
 * Creates or replaces reservation `name` with `cidrs` (addresses or CIDRs). Existing
 * allocations inside them are kept; new assignments avoid them.
 */
export async function putReservation(ctx: IpamContext, name: string, cidrs: readonly string[]): Promise<Reservation> {
  checkResourceName('reservation name', name);
  if (!Array.isArray(cidrs) || cidrs.length === 0) throw new TypeError(`invalid reservation cidrs ${JSON.stringify(cidrs)}: give at least one CIDR`);
  if (cidrs.length > MAX_RESERVATION_CIDRS)
    throw new RangeError(`invalid reservation cidrs: at most ${MAX_RESERVATION_CIDRS} addresses or CIDRs per reservation, got ${cidrs.length}`);
  const parsed: Prefix[] = cidrs.map(parseReservedCidr);
  const r: Reservation = { name, cidrs: parsed };
  return configTxn(ctx, `reserve ${parsed.map(formatPrefix).join(', ')}`, async () => {
    const e = await ctx.store.get(reservationKey(name));
    return {
      compares: [{ key: reservationKey(name), rev: e?.rev ?? 0 }],
      ops: [{ type: 'put', key: reservationKey(name), value: encodeReservation(r) }],
      result: r,
    };
  });
}

/** Deletes reservation `name`; NotFoundError when it does not exist. */
export async function deleteReservation(ctx: IpamContext, name: string): Promise<void> {
  checkResourceName('reservation name', name);
  await configTxn(ctx, `delete reservation "${name}"`, async () => {
    const e = await ctx.store.get(reservationKey(name));
    if (!e) throw new NotFoundError('reservation', name);
    return { compares: [{ key: e.key, rev: e.rev }], ops: [{ type: 'delete', key: e.key }], result: undefined };
  });
}
