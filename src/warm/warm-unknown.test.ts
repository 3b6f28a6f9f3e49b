/**
 * Refills and returns whose answer is lost after the txn committed, on a real SQLite datastore
 * and a real resource DB (the store wrapped so that one txn commits and then throws
 * StoreUnavailableError): the warm pool never assumes "not written" — a returned address the
 * datastore freed is never handed out again, and a refill that landed is not leaked.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { formatAddr, parseAddr } from '../ip/index.js';
import { CONFIG_KEY, agentViewKey, decodeAgentView } from '../cluster/records/index.js';
import { openStore } from '../store/index.js';
import { type WarmRig, startWarmRig, stopWarmRig, warmConf } from '../../test/helpers/warm-rig.js';
import { type LostAnswerStore, lostAnswerStore } from '../../test/helpers/lost-answer-store.js';
import { warmHandlePrefix } from './warm-handle.js';

const root = mkdtempSync(join(tmpdir(), 'podipam-warm-unknown-'));
after(() => rmSync(root, { recursive: true, force: true }));
let seq = 0;

async function rig(): Promise<{ r: WarmRig; store: () => LostAnswerStore }> {
  let wrapped: LostAnswerStore | undefined;
  const r = await startWarmRig(
    {
      root,
      n: ++seq,
      pools: [{ name: 'v4', cidr: '10.78.0.0/16' }],
      options: { node: 'n1', minIdle: 2, maxIdle: 2, capacity: 16, cooldownMs: 0, stickyForMs: 0, tickMs: 3_600_000, writeDelayMs: 3_600_000 },
    },
    {},
    undefined,
    { openStore: async (url) => (wrapped = lostAnswerStore(await openStore(url))) },
  );
  return { r, store: () => wrapped! };
}
/** The request the rig's warm back end takes (typed through the rig: a service's test imports no plugin edge). */
type Req = Parameters<WarmRig['warm']['add']>[0];
const req = (id: string): Req => ({ containerId: id, ifname: 'eth0', cniArgs: new Map(), conf: warmConf });
const addrOf = (a: { ips: readonly { address: string }[] }): string => a.ips[0]!.address.split('/')[0]!;
const touchesBlocks = (ops: readonly { key: string }[]): boolean => ops.some((o) => o.key.startsWith('blocks/'));

/** Every address the node's warm handles hold in the datastore. */
async function warmHeld(r: WarmRig): Promise<string[]> {
  const out: string[] = [];
  for (const h of await r.admin.warmHandles(warmHandlePrefix('n1'))) for (const a of (await r.admin.addressesOf(h)) ?? []) out.push(`${a.addr.value}`);
  return out;
}

describe('warm pool: an outcome whose answer was lost is re-read, never guessed', () => {
  it('a return that committed with its answer lost: its addresses are never handed out again', async () => {
    const { r, store } = await rig();
    try {
      for (let i = 0; i < 4; i++) await r.warm.add(req(`a${i}`));
      await r.warm.maintain();
      for (let i = 0; i < 4; i++) await r.warm.del(req(`a${i}`));
      const before = r.warm.report().pools.ipv4!;
      assert.ok(before.idle > 2, `surplus to return: ${JSON.stringify(before)}`);
      const lost = store().loseNext(touchesBlocks);
      await r.warm.maintain();
      await lost;
      const p = r.warm.report().pools.ipv4!;
      assert.equal(p.idle, 2, `only the kept idle addresses may be handed out: ${JSON.stringify(p)}`);
      assert.equal(p.returning, before.idle - 2, 'the returned ones stay out of the idle queue while in doubt');
      // Every ADD now gets an address the datastore gives to this node's warm pool.
      const live = new Set<string>();
      for (let i = 0; i < before.idle + 2; i++) {
        const a = parseAddr(addrOf(await r.warm.add(req(`b${i}`))));
        const holder = await r.admin.holderOfAddress(a);
        assert.ok(holder?.handle.startsWith(warmHandlePrefix('n1')), `b${i} got ${a.value}, which the datastore gives to ${JSON.stringify(holder)}`);
        assert.ok(!live.has(`${a.value}`), 'no address twice');
        live.add(`${a.value}`);
      }
      r.clock.t += 60_000; // past the back-off
      await r.warm.maintain();
      assert.equal(r.warm.report().pools.ipv4!.returning, 0, 'settled by the re-read');
      const held = await warmHeld(r);
      const p2 = r.warm.report().pools.ipv4!;
      assert.equal(held.length, p2.idle + p2.inUse + p2.returning + p2.reserved, 'the agent knows exactly what the datastore gives it');
    } finally {
      await stopWarmRig(r);
    }
  });

  it('a refill that committed with its answer lost: its addresses join the idle queue, not leaked', async () => {
    const { r, store } = await rig();
    try {
      const lost = store().loseNext((ops) => touchesBlocks(ops) && ops.some((o) => o.type === 'put' && o.key.startsWith(`handles/${warmHandlePrefix('n1')}`)));
      await r.warm.add(req('c0'));
      await r.warm.add(req('c1')); // the pool falls to 0 idle: a refill starts at once, its answer lost
      await lost;
      await r.warm.maintain(); // the run in flight ends (its failure backs off)
      r.clock.t += 60_000;
      await r.warm.maintain();
      const p = r.warm.report().pools.ipv4!;
      const held = await warmHeld(r);
      assert.equal(
        held.length,
        p.idle + p.inUse + p.returning + p.reserved,
        `the datastore gives the node ${held.length} addresses, the agent knows ${JSON.stringify(p)}`,
      );
      assert.equal(p.idle, 2);
    } finally {
      await stopWarmRig(r);
    }
  });

  it('a refill that landed with its answer lost, then reserved: once settled, none of its addresses reaches a pod', async () => {
    const { r, store } = await rig();
    try {
      const lost = store().loseNext((ops) => touchesBlocks(ops) && ops.some((o) => o.type === 'put' && o.key.startsWith(`handles/${warmHandlePrefix('n1')}`)));
      const used = [addrOf(await r.warm.add(req('c0'))), addrOf(await r.warm.add(req('c1')))]; // a refill starts, its answer lost
      await lost;
      await r.warm.maintain();
      const landed = (await warmHeld(r)).filter((v) => !used.map((a) => `${parseAddr(a).value}`).includes(v));
      assert.equal(landed.length, 2, `the lost refill's addresses: ${landed.join(' ')}`);
      const text = landed.map((v) => formatAddr({ family: 4, value: BigInt(v) }));
      // The reservation reaches the agent (its watch) while those addresses are still in doubt:
      // its view answers the generation although its idle queue does not hold them yet.
      await r.admin.putReservation('r1', text);
      const gen = (await r.admin.store.get(CONFIG_KEY))!.rev;
      for (let i = 0; ; i++) {
        await r.warm.flushWrites();
        const e = await r.admin.store.get(agentViewKey('n1'));
        if (e && (decodeAgentView(e).configRev ?? 0) >= gen) break;
        assert.ok(i < 500, 'the agent never applied the reservation');
        await new Promise((res) => setTimeout(res, 10));
      }
      r.clock.t += 60_000; // past the back-off: the re-read settles the refill
      await r.warm.maintain();
      for (let i = 0; i < 4; i++) {
        const got = addrOf(await r.warm.add(req(`d${i}`)));
        assert.ok(!text.includes(got), `d${i} got ${got}, reserved after its refill landed`);
      }
    } finally {
      await stopWarmRig(r);
    }
  });
});
