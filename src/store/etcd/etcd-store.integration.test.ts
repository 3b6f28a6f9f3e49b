import assert from 'node:assert/strict';
import { createServer as createHttpServer } from 'node:http';
import { createServer as createHttp2Server } from 'node:http2';
import { createServer, type Server, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { etcdPost, startEtcd, type EtcdCluster, type EtcdMember } from '../../../test/helpers/etcd.js';
import { type LeaderKill, killLeader } from '../../../test/helpers/etcd-leader.js';
import { storeConformance, takeEvents } from '../../../test/suites/conformance.js';
import { StoreCompactedError, StoreError, StoreUnavailableError } from '../errors.js';
import { openStore } from '../open-store.js';
import type { Store, WatchEvent } from '../store.js';
import type { EtcdStore } from './etcd-store.js';

let etcd: EtcdCluster;
before(async () => {
  etcd = await startEtcd({ members: 1 });
});
after(() => etcd?.stop());

storeConformance('etcd', () => openStore(etcd.url), { incrementsPerWorker: 25 });
// A one-shot process (the per-call plugin) speaks to etcd through its JSON gateway.
storeConformance('etcd, one-shot (JSON gateway)', () => openStore(etcd.url, { oneShot: true }), { incrementsPerWorker: 25 });

/** A TCP server that accepts connections and never answers: a hung or partitioned member. */
async function silentServer(): Promise<{ endpoint: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `127.0.0.1:${(server.address() as { port: number }).port}`,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** A loopback port nothing listens on. */
async function deadEndpoint(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return `127.0.0.1:${port}`;
}

const isUnavailable = (url: string, reason: RegExp) => (e: unknown) => {
  assert.ok(e instanceof StoreUnavailableError, String(e));
  assert.equal(e.url, url);
  assert.match(e.reason, reason);
  return true;
};

async function timed<T>(p: Promise<T>): Promise<[unknown, number]> {
  const t0 = performance.now();
  try {
    return [await p, performance.now() - t0];
  } catch (e) {
    return [e, performance.now() - t0];
  }
}

describe('EtcdStore', () => {
  it('keeps its keys under /podipam/ and sees nothing outside it', async () => {
    const raw = async (path: string, body: unknown) =>
      (await (await fetch(`${etcd.members[0]?.clientUrl}/v3/${path}`, { method: 'POST', body: JSON.stringify(body) })).json()) as {
        kvs?: { key: string }[];
      };
    const b64 = (s: string) => Buffer.from(s).toString('base64');
    await raw('kv/put', { key: b64('/podipam'), value: b64('outside') });
    await raw('kv/put', { key: b64('/podipamx/k'), value: b64('outside') });
    await raw('kv/put', { key: b64('/other/podipam/k'), value: b64('outside') });
    const s = await openStore(etcd.url);
    await s.txn([], [{ type: 'put', key: 'root-test/k', value: 'inside' }]);
    const all = await s.list('');
    assert.ok(all.length > 0);
    assert.ok(
      all.every((e) => e.value !== 'outside'),
      'a key outside /podipam/ leaked into list',
    );
    const stored = await raw('kv/range', { key: b64('/podipam/root-test/k') });
    assert.equal(stored.kvs?.length, 1);
    await s.close();
  });

  it('credentials for a cluster without authentication enabled are accepted (no token is sent)', async () => {
    const s = await openStore(etcd.url.replace('etcd://', 'etcd://root:not-needed@'), { env: {} });
    assert.equal((await s.txn([], [{ type: 'put', key: 'no-auth/k', value: 'v' }])).succeeded, true);
    assert.equal((await s.get('no-auth/k'))?.value, 'v');
    assert.equal(s.roundTrips, 3, 'one authenticate (refused: auth not enabled), a txn and a range');
    await s.close();
  });

  it('a request etcd refuses (too large) is a StoreError, not unavailability', async () => {
    const s = await openStore(etcd.url);
    await assert.rejects(s.txn([], [{ type: 'put', key: 'big/k', value: 'x'.repeat(2_000_000) }]), (e: unknown) => {
      assert.ok(e instanceof StoreError, String(e));
      assert.match(e.message, /request is too large/);
      return true;
    });
    await s.close();
  });

  it('an endpoint with nothing listening gives StoreUnavailableError at once, not after the timeout', async () => {
    const url = `etcd://${await deadEndpoint()}`;
    // "At once" = without waiting for the 60 s timeout: a generous bound on a loaded machine.
    const s = await openStore(url, { timeoutMs: 60_000 });
    const [err, ms] = await timed(s.get('k'));
    isUnavailable(url, /could not be reached \(ECONNREFUSED/)(err);
    assert.ok(ms < 30_000, `took ${ms} ms: waited for the timeout rather than failing on the refusal`);
    const [txnErr] = await timed(s.txn([], [{ type: 'put', key: 'k', value: 'v' }]));
    isUnavailable(url, /no etcd endpoint answered/)(txnErr);
  });

  it('a silent endpoint gives StoreUnavailableError after timeoutMs; a write there has an unknown outcome', async () => {
    const silent = await silentServer();
    try {
      const url = `etcd://${silent.endpoint}`;
      const s = await openStore(url, { timeoutMs: 300 });
      const [err, ms] = await timed(s.get('k'));
      isUnavailable(url, /did not answer within 300 ms/)(err);
      // Not before the timeout; the upper bound only proves it ends (the server never answers).
      assert.ok(ms >= 280 && ms < 20_000, `took ${ms} ms`);
      const [txnErr] = await timed(s.txn([], [{ type: 'put', key: 'k', value: 'v' }]));
      isUnavailable(url, /may or may not have been applied/)(txnErr);
    } finally {
      await silent.close();
    }
  });

  it('fails over from a dead endpoint for reads and writes, then stays on the live one', async () => {
    const url = `etcd://${await deadEndpoint()},${etcd.members[0]?.endpoint}`;
    const s = await openStore(url, { timeoutMs: 500 });
    const r = await s.txn([{ key: 'failover/k', rev: 0 }], [{ type: 'put', key: 'failover/k', value: 'v' }]);
    assert.equal(r.succeeded, true);
    assert.equal(s.roundTrips, 2, 'one refused attempt, one answered');
    assert.equal((await s.get('failover/k'))?.rev, r.rev);
    assert.equal(s.roundTrips, 3, 'the live endpoint is remembered');
  });

  it('a silent first endpoint: a read fails over; a write fails as unknown, and the next call uses the next member', async () => {
    const silent = await silentServer();
    try {
      const url = `etcd://${silent.endpoint},${etcd.members[0]?.endpoint}`;
      const s = await openStore(url, { timeoutMs: 300 });
      const [entry, ms] = await timed(s.get('silent/absent'));
      assert.equal(entry, undefined);
      assert.ok(ms >= 280 && ms < 20_000, `took ${ms} ms`);
      const w = await openStore(url, { timeoutMs: 300 });
      const [err] = await timed(w.txn([], [{ type: 'put', key: 'silent/k', value: 'v' }]));
      isUnavailable(url, /may or may not have been applied/)(err);
      assert.equal((await w.txn([], [{ type: 'put', key: 'silent/k', value: 'v' }])).succeeded, true);
    } finally {
      await silent.close();
    }
  });

  it('an HTTP/2 server that is not etcd: 404 is a StoreError, 503 is transient and a read fails over', async () => {
    let status = 404;
    const server = createHttp2Server((_req, res) => res.writeHead(status).end('<html>nope</html>'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const imposter = `127.0.0.1:${(server.address() as { port: number }).port}`;
      const url = `etcd://${imposter},${etcd.members[0]?.endpoint}`;
      const s = await openStore(url, { timeoutMs: 500 });
      await assert.rejects(s.get('imposter/k'), (e: unknown) => e instanceof StoreError && /refused kv\/range: <html>nope<\/html> \(HTTP 404/.test(e.message));
      status = 503;
      assert.equal(await s.get('imposter/k'), undefined);
      const w = await openStore(url, { timeoutMs: 500 });
      await assert.rejects(w.txn([], [{ type: 'put', key: 'imposter/k', value: 'v' }]), isUnavailable(url, /HTTP 503.*may or may not/));
      await s.close();
      await w.close();
    } finally {
      server.close();
    }
  });

  it('an HTTP/1 server that is not etcd: a read fails over to the next member', async () => {
    const server = createHttpServer((_req, res) => res.writeHead(404).end('<html>nope</html>'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const imposter = `127.0.0.1:${(server.address() as { port: number }).port}`;
      const s = await openStore(`etcd://${imposter},${etcd.members[0]?.endpoint}`, { timeoutMs: 500 });
      assert.equal(await s.get('imposter/k'), undefined);
      await s.close();
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('EtcdStore watch', () => {
  it('a watch from a compacted revision fails with StoreCompactedError naming the oldest revision', async () => {
    const s = await openStore(etcd.url);
    const r1 = (await s.txn([], [{ type: 'put', key: 'compact/k', value: '1' }])).rev;
    const r2 = (await s.txn([], [{ type: 'put', key: 'compact/k', value: '2' }])).rev;
    await etcdPost(etcd.members[0] as EtcdMember, 'kv/compaction', { revision: String(r2) });
    await assert.rejects(takeEvents(s.watch('compact/', r1), 1), (e: unknown) => {
      assert.ok(e instanceof StoreCompactedError, String(e));
      assert.equal(e.fromRevision, r1);
      assert.equal(e.oldest, r2);
      return true;
    });
    // from the oldest kept revision on, the watch works
    assert.deepEqual(
      (await takeEvents(s.watch('compact/', r2), 1)).events.map((e) => e.value),
      ['2'],
    );
    await s.close();
  });
});

describe("EtcdStore watch, a catch-up over etcd's request size limit", () => {
  it('comes in fragments (over 1.5 MiB) and is delivered whole: every revision once, in order, values intact', async () => {
    const s = await openStore(etcd.url);
    try {
      const big = (i: number): string => String.fromCharCode(97 + i).repeat(400_000);
      const revs: number[] = [];
      for (let i = 0; i < 8; i++) revs.push((await s.txn([], [{ type: 'put', key: `frag/k${i}`, value: big(i) }])).rev);
      const { events, batches } = await takeEvents(s.watch('frag/', revs[0] as number), 8);
      assert.deepEqual(
        events.map((e) => [e.key, e.modRevision, e.value.length, e.value[0]]),
        revs.map((rev, i) => [`frag/k${i}`, rev, 400_000, String.fromCharCode(97 + i)]),
      );
      assert.equal(batches.length, 8, 'one batch per revision');
    } finally {
      await s.close();
    }
  });
});

describe('EtcdStore on a 3-member cluster', () => {
  let cluster: EtcdCluster;
  before(async () => {
    cluster = await startEtcd({ members: 3 });
  });
  after(() => cluster?.stop());

  /** One CAS increment of `key`; returns whether it landed for sure. */
  async function increment(s: Store, key: string): Promise<boolean> {
    const seen = await s.get(key);
    const n = seen === undefined ? 0 : Number(seen.value);
    return (await s.txn([{ key, rev: seen?.rev ?? 0 }], [{ type: 'put', key, value: String(n + 1) }])).succeeded;
  }

  it('keeps answering without an error when the member it talks to is SIGKILLed', async () => {
    const leader = await cluster.leader();
    const follower = cluster.members.findIndex((_, i) => i !== leader);
    const order = [follower, ...cluster.members.keys()].filter((i, k, a) => a.indexOf(i) === k);
    const url = `etcd://${order.map((i) => cluster.members[i]?.endpoint).join(',')}`;
    const s = await openStore(url, { timeoutMs: 1000 });
    assert.equal(await increment(s, 'kill-follower/n'), true);
    const tripsBefore = s.roundTrips;
    await cluster.members[follower]?.kill('SIGKILL');
    for (let i = 0; i < 20; i++) assert.equal(await increment(s, 'kill-follower/n'), true);
    assert.equal((await s.get('kill-follower/n'))?.value, '21');
    assert.ok(s.roundTrips > tripsBefore + 41, 'the killed member was never tried');
    await cluster.members[follower]?.restart();
    assert.equal((await s.get('kill-follower/n'))?.value, '21');
  });

  it('a watch survives a restart of the member it is connected to: no event lost or repeated', { timeout: 90_000 }, async () => {
    const leader = await cluster.leader();
    const victim = cluster.members.findIndex((_, i) => i !== leader);
    const member = cluster.members[victim] as EtcdMember;
    const others = cluster.members.filter((_, i) => i !== victim).map((m) => m.endpoint);
    // The watcher lists the victim first, so it connects there; the writer never uses it.
    const watcher = (await openStore(`etcd://${[member.endpoint, ...others].join(',')}`, { timeoutMs: 1000 })) as EtcdStore;
    const writer = await openStore(`etcd://${others.join(',')}`, { timeoutMs: 2000 });
    const p = 'restart-watch/';
    const watch = watcher.watch(p, (await writer.revision()) + 1);
    const it = watch[Symbol.asyncIterator]();
    const seen: WatchEvent[] = [];
    const pump = (async () => {
      for (let r = await it.next(); !r.done; r = await it.next()) seen.push(...r.value);
    })();
    const revs: number[] = [];
    // A put only if the key is absent, so a write whose answer was lost (the cluster may elect
    // a leader while the member restarts) is retried without a second event: the key is re-read.
    const write = async (i: number) => {
      const key = `${p}${String(i).padStart(3, '0')}`;
      for (let attempt = 1; ; attempt++) {
        try {
          const r = await writer.txn([{ key, rev: 0 }], [{ type: 'put', key, value: String(i) }]);
          const rev = r.succeeded ? r.rev : (await writer.get(key))?.rev;
          assert.ok(rev !== undefined, `${key} neither written nor present`);
          revs.push(rev);
          return;
        } catch (e) {
          if (!(e instanceof StoreUnavailableError) || attempt === 5) throw e;
        }
      }
    };
    const waitSeen = async (n: number) => {
      for (const deadline = Date.now() + 30_000; seen.length < n;) {
        assert.ok(Date.now() < deadline, `the watch saw ${seen.length} of ${n} events`);
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    for (let i = 0; i < 10; i++) await write(i);
    await waitSeen(10);
    assert.equal(watch.endpoint, member.endpoint, 'the watch is connected to the member about to restart');
    await member.kill('SIGKILL');
    for (let i = 10; i < 20; i++) await write(i); // while it is down
    await waitSeen(20);
    assert.ok(others.includes(watch.endpoint), `reconnected to another member, not ${watch.endpoint}`);
    await member.restart();
    for (let i = 20; i < 30; i++) await write(i); // after it is back
    await waitSeen(30);
    await new Promise((r) => setTimeout(r, 300)); // room for a duplicate to show up
    await it.return?.();
    await pump;
    assert.deepEqual(
      seen.map((e) => e.value),
      Array.from({ length: 30 }, (_, i) => String(i)),
    );
    assert.deepEqual(
      seen.map((e) => e.modRevision),
      revs,
    );
    await watcher.close();
    await writer.close();
  });

  it('recovers within seconds when the leader is SIGKILLed, losing no increment it reported', { timeout: 30_000 }, async () => {
    const s = await openStore(cluster.url, { timeoutMs: 1000 });
    const key = 'kill-leader/n';
    let kill: LeaderKill | undefined;
    let landed = 0;
    let unknown = 0;
    let killedAt = 0;
    let recoveredAfter = -1;
    const deadline = Date.now() + 20_000;
    while (landed < 40) {
      assert.ok(Date.now() < deadline, `only ${landed} increments landed in 20 s (${unknown} unavailable)`);
      if (landed === 10 && killedAt === 0) {
        // Found right before the kill and proven to have been the leader (a new term follows).
        kill = await killLeader(cluster);
        killedAt = kill.killedAt;
      }
      try {
        if (await increment(s, key)) {
          landed++;
          if (killedAt > 0 && recoveredAfter < 0) recoveredAfter = performance.now() - killedAt;
        }
      } catch (e) {
        assert.ok(e instanceof StoreUnavailableError, String(e));
        unknown++;
      }
    }
    const value = Number((await s.get(key))?.value);
    // a txn whose outcome was unknown may have landed: the value lies between the two counts
    assert.ok(value >= landed && value <= landed + unknown, `value ${value}, landed ${landed}, unknown ${unknown}`);
    assert.ok(recoveredAfter >= 0 && recoveredAfter < 10_000, `recovered after ${recoveredAfter} ms`);
    assert.ok(kill, 'the leader was never killed');
    await kill.elected;
    await cluster.members[kill.killed]!.restart();
  });
});
