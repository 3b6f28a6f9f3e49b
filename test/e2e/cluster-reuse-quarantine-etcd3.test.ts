/**
 * The reuse quarantine on a real 3-member etcd, through real plugin processes of two nodes: a
 * pool of 26 usable addresses with `reuseAfter`; node A's pod releases its address X; then a
 * storm of ADDs on A and B takes every other address (B borrowing from A's block once its own
 * is full), and ADDs keep coming on both nodes while X is quarantined: none gets X, each fails
 * as exhaustion does (code 100) saying the free address is quarantined until when. Once the
 * quarantine is over, an ADD on B gets X.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startEtcd } from '../helpers/etcd.js';
import { PODIPAM_BIN, type PluginRun, clusterCall, runCliSync, runPlugin } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';

const REUSE_AFTER_MS = 30_000;
/** The clock margin the quarantine adds (src/alloc/block-quarantine.ts). */
const MARGIN_MS = 1000;
const LANES_PER_NODE = 3;

interface Outcome {
  readonly id: string;
  readonly node: string;
  readonly start: number;
  readonly end: number;
  readonly ip?: string;
  readonly error?: { code: number; msg: string };
}

const ipOf = (r: PluginRun): string => ((JSON.parse(r.stdout) as { ips: { address: string }[] }).ips[0]?.address ?? '').replace(/\/\d+$/, '');

test(
  '3-member etcd: an address released on node A is handed out on neither node before reuseAfter, under a storm that takes every other address; after it, on B',
  { timeout: 240_000 },
  async (t) => {
    const etcd = await startEtcd({ members: 3 });
    const dir = makeTempDir('reuse-quarantine');
    try {
      const url = etcd.url;
      const cache = join(dir.path, 'cache');
      // Two /28 blocks of 13 usable addresses each (network, gateway, broadcast excluded).
      const created = runCliSync(url, ['pool', 'create', 'q', '--cidr', '10.231.0.0/27', '--block-size', '28', '--reuse-after', `${REUSE_AFTER_MS / 1000}s`]);
      assert.equal(created.code, 0, created.stderr);
      assert.match(created.stdout, /released addresses quarantined for 30s/);
      const refused = runCliSync(url, ['pool', 'set', 'q', '--reuse-after', 'soon']);
      assert.deepEqual(
        [refused.code, refused.stderr.trim()],
        [2, 'podipam: invalid --reuse-after "soon": expected a duration such as "0", "500ms", "30s" or "5m"'],
      );
      assert.match(runCliSync(url, ['pool', 'show', 'q']).stdout, /released addresses quarantined for 30s/);
      const run = async (command: 'ADD' | 'DEL', id: string, node: string): Promise<Outcome> => {
        const start = Date.now();
        const r = await runPlugin(PODIPAM_BIN, clusterCall('reuse-q', url, cache, command, id, node));
        const end = Date.now();
        if (r.code === 0) return { id, node, start, end, ...(command === 'ADD' ? { ip: ipOf(r) } : {}) };
        const err = JSON.parse(r.stdout) as { code: number; msg: string; details?: string };
        return { id, node, start, end, error: { code: err.code, msg: `${err.msg} ${err.details ?? ''}` } };
      };

      const victim = await run('ADD', 'victim', 'node-a');
      assert.ok(victim.ip, `the victim's ADD failed: ${JSON.stringify(victim.error)}`);
      const x = victim.ip;
      const del = await run('DEL', 'victim', 'node-a');
      assert.equal(del.error, undefined, JSON.stringify(del.error));
      // The release time is the releasing plugin's clock, somewhere within the DEL.
      const quarantineFrom = del.start;
      const quarantineEnd = del.end + REUSE_AFTER_MS + MARGIN_MS;

      const outcomes: Outcome[] = [];
      let seq = 0;
      const lane = async (node: string): Promise<void> => {
        for (;;) {
          const o = await run('ADD', `${node}-${seq++}`, node);
          outcomes.push(o);
          if (o.error) return;
        }
      };
      const lanes: Promise<void>[] = [];
      for (const node of ['node-a', 'node-b']) for (let l = 0; l < LANES_PER_NODE; l++) lanes.push(lane(node));
      await Promise.all(lanes);
      const stormEnd = Date.now();
      const given = outcomes.filter((o) => o.ip !== undefined);
      t.diagnostic(
        `storm: ${given.length} addresses handed out in ${stormEnd - del.end} ms after the release; ${outcomes.length - given.length} lanes ended on an error`,
      );
      assert.ok(
        stormEnd < quarantineFrom + REUSE_AFTER_MS,
        `the storm took ${stormEnd - del.end} ms, longer than reuseAfter: it proves nothing about the quarantine`,
      );
      assert.equal(given.length, 25, `every address but the quarantined one is handed out: got ${given.map((o) => o.ip).join(', ')}`);
      assert.ok(!given.some((o) => o.ip === x), `${x} handed out within its quarantine: ${JSON.stringify(given.find((o) => o.ip === x))}`);
      assert.equal(new Set(given.map((o) => o.ip)).size, given.length, 'every address distinct');
      assert.ok(given.some((o) => o.node === 'node-b') && given.some((o) => o.node === 'node-a'));

      // While X is quarantined, ADDs on both nodes fail as exhaustion, naming the quarantine.
      const probes: Outcome[] = [];
      for (let i = 0; Date.now() < quarantineFrom + REUSE_AFTER_MS - 2000; i++) {
        probes.push(await run('ADD', `probe-${i}`, i % 2 === 0 ? 'node-b' : 'node-a'));
        await sleep(500);
      }
      // At least one probe per node (a loaded machine starts a plugin process in seconds; the
      // storm's own failures above already ran inside the quarantine too).
      assert.ok(
        probes.some((p) => p.node === 'node-a') && probes.some((p) => p.node === 'node-b'),
        `only ${probes.length} probes ran inside the quarantine, not one on each node`,
      );
      for (const p of probes) {
        assert.equal(p.ip, undefined, `${p.id} on ${p.node} got ${p.ip} at +${p.end - quarantineFrom} ms, within the quarantine`);
        assert.equal(p.error?.code, 100, JSON.stringify(p));
        assert.match(p.error.msg, /1 free address is quarantined after its release \(pool reuseAfter\) until \d{4}-\d\d-\d\dT/);
      }
      for (const o of outcomes.filter((o) => o.error)) assert.equal(o.error!.code, 100, JSON.stringify(o));

      // After it, node B gets X.
      await sleep(Math.max(0, quarantineEnd - Date.now()));
      const after = await run('ADD', 'after', 'node-b');
      t.diagnostic(
        `${x} released at +0 ms; ${probes.length} probes refused up to +${probes.at(-1)!.end - quarantineFrom} ms; handed to node-b at +${after.end - quarantineFrom} ms`,
      );
      assert.equal(after.ip, x, JSON.stringify(after));
      assert.ok(after.end >= quarantineFrom + REUSE_AFTER_MS, 'handed out only after reuseAfter');
      const check = runCliSync(url, ['ipam', 'check']);
      assert.equal(check.code, 0, check.stdout + check.stderr);
    } finally {
      dir.remove();
      await etcd.stop();
    }
  },
);
