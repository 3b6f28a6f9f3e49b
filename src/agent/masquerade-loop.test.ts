import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ClusterIpam } from '../cluster/service/cluster-ipam.js';
import { formatPrefix } from '../ip/index.js';
import { recordingLog } from '../log/logger.js';
import type { FamilyOutcome } from '../masq/masquerade-iptables.js';
import { openStore } from '../store/index.js';
import { MasqueradeLoop } from './masquerade-loop.js';

type Pools = Parameters<NonNullable<ConstructorParameters<typeof MasqueradeLoop>[0]['sync']>>[0];

/** A sync standing in for iptables: records the pools it was given, answers as `fail` says. */
function fakeSync(fail: { v4?: string }) {
  const calls: string[][] = [];
  const sync = (pools: Pools): Promise<FamilyOutcome[]> => {
    calls.push(pools.map(formatPrefix));
    const of = (family: 4 | 6) => pools.filter((p) => p.family === family).map(formatPrefix);
    const v4: FamilyOutcome =
      fail.v4 !== undefined
        ? { family: 4, tool: 'iptables', state: 'failed', cidrs: of(4), error: fail.v4 }
        : { family: 4, tool: 'iptables', state: 'synced', cidrs: of(4) };
    return Promise.resolve([v4, { family: 6, tool: 'ip6tables', state: 'synced', cidrs: of(6) }]);
  };
  return { calls, sync };
}

test('MasqueradeLoop: every pool of the store (disabled ones too) on each sync; a failure is its state and one warning, the recovery clears it', async () => {
  const store = await openStore('memory:');
  const ipam = new ClusterIpam(store);
  await ipam.createPool({ name: 'a', cidr: '10.1.0.0/16' });
  await ipam.createPool({ name: 'b', cidr: 'fd00:1::/64', disabled: true });
  const log = recordingLog();
  const fail: { v4?: string } = {};
  const fake = fakeSync(fail);
  const loop = new MasqueradeLoop({ intervalMs: 3_600_000, openStore: () => Promise.resolve(store), sync: fake.sync, log });
  try {
    assert.equal(loop.status().state, 'pending');
    await loop.runNow();
    assert.deepEqual(fake.calls, [['10.1.0.0/16', 'fd00:1::/64']]);
    assert.equal(loop.status().state, 'synced');
    assert.deepEqual(
      loop.status().families.map((f) => [f.family, f.cidrs]),
      [
        [4, ['10.1.0.0/16']],
        [6, ['fd00:1::/64']],
      ],
    );

    fail.v4 = 'iptables-restore not found on PATH';
    await loop.runNow();
    await loop.runNow();
    const s = loop.status();
    assert.equal(s.state, 'failed');
    assert.equal(s.error, 'IPv4: iptables-restore not found on PATH');
    assert.equal(s.failures, 2);
    assert.equal(log.records.filter((r) => r.level === 'warn').length, 1, JSON.stringify(log.records));

    delete fail.v4;
    await ipam.createPool({ name: 'c', cidr: '10.2.0.0/24' });
    await loop.runNow();
    assert.equal(loop.status().state, 'synced');
    assert.equal(loop.status().error, undefined);
    assert.deepEqual(fake.calls.at(-1), ['10.1.0.0/16', 'fd00:1::/64', '10.2.0.0/24']);

    // A corrupt pool record (say, iptables syntax in its cidr): the sync fails, nothing is written.
    const before = fake.calls.length;
    await store.txn([], [{ type: 'put', key: 'pools/evil', value: JSON.stringify({ cidr: '10.3.0.0/16 -j ACCEPT', blockSize: 26, nodeSelector: 'all()' }) }]);
    await loop.runNow();
    assert.equal(loop.status().state, 'failed');
    assert.match(loop.status().error ?? '', /^reading the pools: .*pools\/evil/);
    assert.equal(fake.calls.length, before, 'the chains are left as they were');
  } finally {
    await loop.stop();
    await store.close();
  }
});

test('MasqueradeLoop: no datastore known yet is pending, not a failure; a datastore that fails is', async () => {
  const log = recordingLog();
  const fake = fakeSync({});
  let store: () => Promise<undefined> = () => Promise.resolve(undefined);
  const loop = new MasqueradeLoop({ intervalMs: 3_600_000, openStore: () => store(), sync: fake.sync, log });
  await loop.runNow();
  assert.equal(loop.status().state, 'pending');
  assert.deepEqual(fake.calls, [], 'nothing written without pools to write');
  store = () => Promise.reject(new Error('connection refused'));
  await loop.runNow();
  assert.equal(loop.status().state, 'failed');
  assert.equal(loop.status().error, 'reading the pools: connection refused');
  assert.deepEqual(fake.calls, [], 'the chains are left as they were, not emptied');
  await loop.stop();
});
