/**
 * A runtime-absent release's evidence (the runtime's two list times, the container id, the age)
 * from the writer to the reader, on real records: the cluster back end's release and the warm
 * pool's record delete stamp it, derive-holds carries it to the hold's end, the history file
 * (real SQLite) keeps it, and the readers' JSON and words show it. A stamp with broken evidence is
 * refused naming the field; a history file written before the evidence column is read (read-only:
 * no evidence) and gets the column on a writable open.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClusterIpam } from '../cluster/service/cluster-ipam.js';
import { decodeStamp, stampKey } from '../cluster/records/history-stamp.js';
import { formatAddr } from '../ip/index.js';
import type { ReleaseEvidence } from '../model/history.js';
import { openStore, type Store, type WatchEvent } from '../store/index.js';
import { listAll } from '../store/list-all.js';
import { HoldState, revisionsOf } from './derive-holds.js';
import { holdJson, holdSentence, recordJson } from './format-history.js';
import type { HoldEnd, HoldStart } from './history-db.js';
import { openHistoryDb } from './sqlite-history-db.js';

const T0 = Date.parse('2026-03-01T10:00:00.000Z');
const dir = mkdtempSync(join(tmpdir(), 'podipam-evidence-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const EV: ReleaseEvidence = { containerId: 'c1', lists: [T0 + 300_000, T0 + 360_000], ageMs: 300_000 };

async function changes(store: Store, from: number): Promise<WatchEvent[]> {
  const last = await store.revision();
  const out: WatchEvent[] = [];
  const ac = new AbortController();
  for await (const b of store.watch('', from, { signal: ac.signal })) {
    out.push(...b);
    if (b.length > 0 && b[b.length - 1]!.modRevision >= last) break;
  }
  ac.abort();
  return out;
}

/** Every end and start derived from the changes since `from`. */
async function derive(store: Store, from: number): Promise<{ ends: HoldEnd[]; starts: HoldStart[] }> {
  const state = new HoldState([], await listAll(store, 'pools/'));
  const ends: HoldEnd[] = [];
  const starts: HoldStart[] = [];
  let at = 0;
  for (const [, evs] of revisionsOf(await changes(store, from))) {
    const d = state.applyRevision(evs, T0 + 999_000, at);
    assert.deepEqual(d.problems, []);
    for (const p of d.pairs) {
      starts.push(p.start);
      ends.push(p.end);
    }
    ends.push(...d.ends);
    starts.push(...d.starts);
    at = Math.max(at, d.after);
  }
  return { ends, starts };
}

test('cluster: a runtime-absent release stamps its evidence; the hold ends with it in the history file, its JSON and its sentence; a DEL beside it has none', async () => {
  const store = await openStore('memory:');
  const clock = { now: T0 };
  const ipam = new ClusterIpam(store, { now: () => new Date(clock.now), writer: 'n1' });
  await ipam.createPool({ name: 'v4', cidr: '10.0.0.0/24', blockSize: 28 });
  const from = (await store.revision()) + 1;
  const attrs = (c: string) => ({ network: 'net', containerId: c, ifname: 'eth0', namespace: 'web', pod: `web-${c}` });
  const [a] = await ipam.assign({ node: 'n1', handle: 'net:c1:eth0', auto: { 4: 1 }, attrs: attrs('c1') });
  const [b] = await ipam.assign({ node: 'n1', handle: 'net:c2:eth0', auto: { 4: 1 }, attrs: attrs('c2') });
  clock.now = T0 + 400_000;
  const c1 = (await ipam.nodeAttachments('n1')).find((x) => x.containerId === 'c1')!;
  const absent = ipam.withReason('runtime-absent', EV);
  assert.ok(await absent.releaseAttachmentAsSeen(c1.handle, c1.rev));
  const e = await store.get(stampKey('n1'));
  assert.deepEqual(decodeStamp(e!.key, e!.value), { at: T0 + 400_000, why: 'runtime-absent', evidence: EV });
  clock.now = T0 + 401_000;
  await absent.withReason('del').releaseHandle('net:c2:eth0'); // another reason drops the evidence
  const { ends, starts } = await derive(store, from);
  const byAddr = new Map(ends.map((x) => [x.address, x]));
  assert.deepEqual(byAddr.get(formatAddr(a!.addr)), {
    address: formatAddr(a!.addr),
    handle: 'net:c1:eth0',
    until: { at: T0 + 400_000 },
    why: 'runtime-absent',
    evidence: EV,
  });
  assert.deepEqual(byAddr.get(formatAddr(b!.addr)), { address: formatAddr(b!.addr), handle: 'net:c2:eth0', until: { at: T0 + 401_000 }, why: 'del' });

  const db = openHistoryDb(join(dir, 'cluster.db'));
  try {
    db.apply({ ends: [], starts, position: { source: 'memory:', revision: 1, at: T0 } });
    db.apply({ ends, starts: [], position: { source: 'memory:', revision: 2, at: T0 + 401_000 } });
    const [hold] = db.holdsOfAddress(formatAddr(a!.addr));
    assert.deepEqual(hold?.until, { at: T0 + 400_000, why: 'runtime-absent', evidence: EV });
    assert.deepEqual(holdJson(hold).evidence, { containerId: 'c1', lists: ['2026-03-01T10:05:00.000Z', '2026-03-01T10:06:00.000Z'], ageMs: 300_000 });
    assert.match(
      holdSentence(hold),
      /released: runtime-absent: the runtime listed no sandbox c1 at 2026-03-01T10:05:00\.000Z nor at 2026-03-01T10:06:00\.000Z; 300 s old then/,
    );
    assert.equal(db.holdsOfAddress(formatAddr(b!.addr))[0]?.until?.evidence, undefined);
    const released = [...db.records(0)].filter((r) => r.event === 'released').map(recordJson);
    assert.deepEqual(
      released.map((r) => [r.handle, r.why, r.evidence]),
      [
        ['net:c1:eth0', 'runtime-absent', { containerId: 'c1', lists: ['2026-03-01T10:05:00.000Z', '2026-03-01T10:06:00.000Z'], ageMs: 300_000 }],
        ['net:c2:eth0', 'del', undefined],
      ],
    );
  } finally {
    db.close();
  }
});

test("warm pool: a pod record delete queued with evidence carries it in the stamp's keys to the hold's end", async () => {
  const store = await openStore('memory:');
  const ipam = new ClusterIpam(store, { now: () => new Date(T0), writer: 'n1' });
  await ipam.createPool({ name: 'v4', cidr: '10.0.0.0/24', blockSize: 28 });
  const from = (await store.revision()) + 1;
  const got = await ipam.assign({ node: 'n1', handle: 'podipam-warm:n1:r1', auto: { 4: 1 } });
  const addr = formatAddr(got[0]!.addr);
  const key = 'agent-pods/n1/net:c1:eth0';
  const value = JSON.stringify({
    network: 'net',
    containerId: 'c1',
    ifname: 'eth0',
    addrs: [addr],
    warmHandles: ['podipam-warm:n1:r1'],
    since: new Date(T0).toISOString(),
  });
  await ipam.writeWarmRecords([{ key, value }]);
  await ipam.writeWarmRecords([{ key, value: undefined, at: T0 + 400_000, why: 'runtime-absent', evidence: EV }]);
  const { ends } = await derive(store, from);
  assert.deepEqual(ends, [{ address: addr, handle: 'net:c1:eth0', until: { at: T0 + 400_000 }, why: 'runtime-absent', evidence: EV }]);
});

test('a stamp whose evidence is broken is refused naming the field', () => {
  assert.throws(
    () => decodeStamp('stamps/n1', JSON.stringify({ at: 1, why: 'runtime-absent', evidence: { containerId: 'c1', lists: [5, 2], ageMs: 1 } })),
    /field "evidence": evidence\.lists is \[5,2\], not two times in order/,
  );
  assert.throws(
    () =>
      decodeStamp(
        'stamps/n1',
        JSON.stringify({ at: 1, keys: { k: { at: 1, why: 'runtime-absent', evidence: { containerId: '', lists: [1, 2], ageMs: 1 } } } }),
      ),
    /keys\["k"\]\.evidence: evidence\.containerId is ""/,
  );
});

test('a history file written before the evidence column: read-only it reads (no evidence); a writable open adds the column', () => {
  const file = join(dir, 'old.db');
  openHistoryDb(file).close();
  const Db = createRequire(import.meta.url)('better-sqlite3') as new (p: string) => { exec(s: string): void; close(): void };
  const raw = new Db(file);
  raw.exec('ALTER TABLE holds DROP COLUMN evidence');
  raw.exec("INSERT INTO holds (address, handle, lo, from_at, until_at, why) VALUES ('10.0.0.9', 'h', 1, 1, 2, 'del')");
  raw.close();
  const ro = openHistoryDb(file, { readonly: true });
  assert.deepEqual(ro.holdsOfAddress('10.0.0.9')[0]?.until, { at: 2, why: 'del' });
  ro.close();
  const rw = openHistoryDb(file);
  rw.apply({
    ends: [{ address: '10.0.0.9', handle: 'h2', until: { at: 5 }, why: 'runtime-absent', evidence: EV }],
    starts: [],
    position: { source: 'memory:', revision: 1, at: 5 },
  });
  assert.deepEqual(
    rw.holdsOfAddress('10.0.0.9').map((h) => h.until),
    [
      { at: 2, why: 'del' },
      { at: 5, why: 'runtime-absent', evidence: EV },
    ],
  );
  rw.close();
});
