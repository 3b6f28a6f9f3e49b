/**
 * The local back end under concurrency and crashes: many plugin processes on one network
 * directory at once, some killed with SIGKILL mid-flight, some of them host-local. The flock on
 * `<dir>/lock` must serialise them all: no address handed out twice, no lock left held, and DEL
 * of every container leaves only `lock` and `last_reserved_ip.*`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { HOST_LOCAL_BIN, PODIPAM_BIN, type PluginCall, type PluginRun, runPlugin, startPlugin } from '../helpers/plugin.js';
import { withTempDir } from '../helpers/tmp.js';
import { FileLock } from '../../src/local/file-lock.js';

const NET = 'conc';

function call(dataDir: string, command: string, id: string, type = 'podipam'): PluginCall {
  return {
    command,
    containerId: id,
    ifname: 'eth0',
    config: { cniVersion: '1.0.0', name: NET, ipam: { type, dataDir, ranges: [[{ subnet: '10.77.0.0/24' }], [{ subnet: 'fd77::/120' }]] } },
  };
}

const addresses = (r: PluginRun): string[] => (JSON.parse(r.stdout) as { ips: { address: string }[] }).ips.map((i) => i.address);

/** Address files of the directory → their content; asserts no content appears twice per family. */
function reservations(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const name of readdirSync(dir)) {
    if (name === 'lock' || name.startsWith('last_reserved_ip.')) continue;
    out.set(name, readFileSync(join(dir, name), 'utf8'));
  }
  for (const fam of [':', '.']) {
    const owners = [...out].filter(([n]) => n.includes(fam)).map(([, c]) => c);
    assert.equal(new Set(owners).size, owners.length, `an attachment holds two addresses of one family: ${owners}`);
  }
  return out;
}

function onlyBookkeeping(dir: string): void {
  assert.deepEqual(readdirSync(dir).sort(), ['last_reserved_ip.0', 'last_reserved_ip.1', 'lock']);
}

async function delAll(dataDir: string, ids: readonly string[]): Promise<void> {
  const runs = await Promise.all(ids.map((id) => runPlugin(PODIPAM_BIN, call(dataDir, 'DEL', id))));
  runs.forEach((r, i) => assert.equal(r.code, 0, `DEL ${ids[i]}: ${r.stdout}`));
}

test('64 parallel ADDs get 64 distinct addresses per family; 64 DELs leave nothing behind', () =>
  withTempDir('conc64', async (dataDir) => {
    const ids = Array.from({ length: 64 }, (_, i) => `par${i}`);
    const runs = await Promise.all(ids.map((id) => runPlugin(PODIPAM_BIN, call(dataDir, 'ADD', id))));
    runs.forEach((r, i) => assert.equal(r.code, 0, `ADD ${ids[i]}: ${r.stdout}`));
    const all = runs.flatMap(addresses);
    assert.equal(new Set(all).size, 128);
    const files = reservations(join(dataDir, NET));
    assert.equal(files.size, 128);
    runs.forEach((r, i) => {
      for (const a of addresses(r)) assert.equal(files.get(a.split('/')[0]!), `${ids[i]}\r\neth0`);
    });
    await delAll(dataDir, ids);
    onlyBookkeeping(join(dataDir, NET));
  }));

test('SIGKILL in the middle of ADDs: no duplicates, no stuck lock, DEL cleans up everything', (t) =>
  withTempDir('kill', async (dataDir) => {
    const dir = join(dataDir, NET);
    const ids = Array.from({ length: 32 }, (_, i) => `k${i}`);
    // The plugins first queue on a lock we hold, so some die while waiting for it; the other
    // kills are spread over the whole run (32 node start-ups take a second or more on 2 cores),
    // so some land inside the locked section — a plugin that finished first is not killed.
    await runPlugin(PODIPAM_BIN, call(dataDir, 'DEL', 'warmup')); // creates the directory and lock
    const lock = FileLock.open(join(dir, 'lock'));
    lock.lock();
    const started = ids.map((id) => startPlugin(PODIPAM_BIN, call(dataDir, 'ADD', id)));
    const victims = new Set<number>();
    while (victims.size < 16) victims.add(Math.floor(Math.random() * 32));
    const kills = [...victims].map(
      (i, n) =>
        new Promise<void>((resolve) =>
          setTimeout(() => {
            started[i]!.child.kill('SIGKILL');
            resolve();
          }, n < 6 ? 150 : 200 + Math.floor(Math.random() * 2300)),
        ),
    );
    setTimeout(() => {
      lock.unlock();
      lock.close();
    }, 250);
    await Promise.all(kills);
    const runs = await Promise.all(started.map((s) => s.done));
    const ok = runs.filter((r) => r.code === 0);
    const killed = runs.filter((r) => r.signal === 'SIGKILL').length;
    assert.ok(killed > 0, 'no plugin was killed');
    for (const r of runs) if (r.signal === null) assert.equal(r.code, 0, r.stdout);
    const handed = ok.flatMap(addresses);
    assert.equal(new Set(handed).size, handed.length, 'an address was handed out twice');
    const held = reservations(dir);
    const orphans = [...held.values()].filter((c) => runs.some((r, i) => r.signal === 'SIGKILL' && c === `${ids[i]}\r\neth0`)).length;
    t.diagnostic(`${ok.length} ADDs succeeded, ${killed} killed (${orphans} addresses held by killed plugins, released by their DEL below)`);

    // The lock is free: a new ADD goes through promptly.
    const after = await runPlugin(PODIPAM_BIN, call(dataDir, 'ADD', 'after'));
    assert.equal(after.code, 0, after.stdout);
    assert.ok(after.ms < 5_000, `ADD after the kills took ${after.ms} ms`);

    await delAll(dataDir, [...ids, 'after']);
    onlyBookkeeping(dir);
  }));

test('podipam and host-local ADD concurrently on one directory: the shared flock keeps them apart', () =>
  withTempDir('mixed', async (dataDir) => {
    const ids = Array.from({ length: 40 }, (_, i) => `mix${i}`);
    const runs = await Promise.all(
      ids.map((id, i) => (i % 2 ? runPlugin(PODIPAM_BIN, call(dataDir, 'ADD', id)) : runPlugin(HOST_LOCAL_BIN, call(dataDir, 'ADD', id, 'host-local')))),
    );
    runs.forEach((r, i) => assert.equal(r.code, 0, `ADD ${ids[i]}: ${r.stdout}`));
    const all = runs.flatMap(addresses);
    assert.equal(new Set(all).size, 80);
    assert.equal(reservations(join(dataDir, NET)).size, 80);
    // DEL through the other plugin than the one that added.
    const dels = await Promise.all(
      ids.map((id, i) => (i % 2 ? runPlugin(HOST_LOCAL_BIN, call(dataDir, 'DEL', id, 'host-local')) : runPlugin(PODIPAM_BIN, call(dataDir, 'DEL', id)))),
    );
    dels.forEach((r) => assert.equal(r.code, 0, r.stdout));
    onlyBookkeeping(join(dataDir, NET));
  }));
