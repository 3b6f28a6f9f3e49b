/**
 * The local back end under concurrency and crashes: many plugin processes on one network
 * directory at once, some killed with SIGKILL mid-flight, some of them host-local. The flock on
 * `<dir>/lock` must serialise them all: no address handed out twice, no lock left held, and DEL
 * of every container leaves only `lock` and `last_reserved_ip.*`. Where a kill lands (holding
 * the lock, waiting for it) is read from /proc/locks with the victim stopped, not guessed; four
 * more are killed by the crash-point hook at each step of the locked section.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { HOST_LOCAL_BIN, PODIPAM_BIN, type PluginCall, type PluginRun, runPlugin, startPlugin } from '../helpers/plugin.js';
import { exited, flockState, openers, stopProcess } from '../helpers/proc-locks.js';
import { withTempDir } from '../helpers/tmp.js';
import { crashEnv, expectCrash } from '../helpers/crash-points.js';
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
    // The temporary file a writer killed between link and unlink leaves (a second link to its
    // address file) is no reservation; the next locked scan removes it.
    if (name === 'lock' || name.startsWith('last_reserved_ip.') || name === '.podipam-reserve.tmp') continue;
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

test('SIGKILL in the middle of ADDs, proven inside the locked section and while waiting for it: no duplicates, no stuck lock, DEL cleans up everything', (t) =>
  withTempDir('kill', async (dataDir) => {
    const dir = join(dataDir, NET);
    const lockPath = join(dir, 'lock');
    const ids = Array.from({ length: 32 }, (_, i) => `k${i}`);
    await runPlugin(PODIPAM_BIN, call(dataDir, 'DEL', 'warmup')); // creates the directory and lock
    // The plugins first queue on a lock we hold. Where each kill lands is read from
    // /proc/locks, not guessed from timing: waiters are killed while we hold the lock (none can
    // have it), holders once stopped (what a stopped process holds cannot change before the
    // SIGKILL). Some die waiting for the lock, some holding it.
    const lock = FileLock.open(lockPath);
    lock.lock();
    const started = ids.map((id) => startPlugin(PODIPAM_BIN, call(dataDir, 'ADD', id)));
    const pids = started.map((p) => p.child.pid!);
    const landed = { holding: 0, waiting: 0, elsewhere: 0 };
    const dead = new Set<number>();
    /** Stops process i, notes whether it holds the lock, kills it; false if it had exited. */
    const kill = async (i: number): Promise<boolean> => {
      if (dead.has(i) || exited(pids[i]!)) return false;
      dead.add(i);
      const stopped = await stopProcess(pids[i]!);
      const holding = stopped && flockState(lockPath).holders.includes(pids[i]!);
      started[i]!.child.kill('SIGKILL');
      landed[holding ? 'holding' : 'elsewhere']++;
      return holding;
    };
    const order = ids.map((_, i) => i).sort(() => Math.random() - 0.5);
    const [randomVictims, hunted] = [order.slice(0, 8), order.slice(8, 22)];

    // 1. Killed while waiting: once 8 plugins wait for the lock we hold (they have the lock
    // file open, and none can have the lock), 4 of the waiters die.
    let waiting: readonly number[] = [];
    for (let i = 0; i < 3000 && waiting.length < 8; i++) {
      await new Promise((r) => setTimeout(r, 10));
      const { holders, waiters } = flockState(lockPath);
      waiting = [...new Set([...waiters, ...openers(lockPath, pids).filter((p) => !holders.includes(p))])];
    }
    assert.ok(waiting.length >= 8, `only ${waiting.length} plugins queued on the lock within 30 s`);
    for (const pid of waiting.slice(0, 4)) {
      const i = pids.indexOf(pid);
      assert.ok(i >= 0, `pid ${pid} waiting on ${lockPath} is not one of our plugins`);
      dead.add(i);
      started[i]!.child.kill('SIGKILL');
      landed.waiting++;
    }

    // 2. Killed at random moments over the run (start-up, lock, write, exit).
    const kills = randomVictims.map(
      (i) => new Promise<void>((resolve) => setTimeout(() => void kill(i).then(() => resolve()), Math.floor(Math.random() * 2300))),
    );
    lock.unlock();
    lock.close();

    // 3. Killed inside the locked section: each hunted plugin is watched (polled between
    // event-loop turns, at most 30 s) until /proc/locks shows it holding the lock.
    const hunt = new Set(hunted);
    const deadline = Date.now() + 30_000;
    while (hunt.size > 0 && Date.now() < deadline) {
      const { holders } = flockState(lockPath);
      for (const i of hunt) {
        if (holders.includes(pids[i]!)) {
          await kill(i);
          hunt.delete(i);
        } else if (dead.has(i) || exited(pids[i]!)) hunt.delete(i);
      }
      await new Promise((r) => setImmediate(r));
    }
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
    t.diagnostic(
      `${ok.length} ADDs succeeded, ${killed} killed: ${landed.holding} holding the lock, ${landed.waiting} waiting for it, ${landed.elsewhere} elsewhere ` +
        `(${orphans} addresses held by killed plugins, released by their DEL below)`,
    );
    assert.ok(landed.waiting >= 1, 'no kill landed while the plugin waited for the lock');
    assert.ok(landed.holding >= 1, 'no kill landed inside the locked section');

    // Killed inside the locked section by the crash-point hook, not found by watching: at each
    // step of the section (lock taken; temporary file written; address file linked; its
    // last_reserved_ip written), concurrently.
    const points = ['local.lock.held', 'local.add.tmp-written', 'local.add.reserved', 'local.add.recorded'];
    const armedIds = points.map((_, i) => `armed${i}`);
    const armedRuns = await Promise.all(points.map((p, i) => runPlugin(PODIPAM_BIN, { ...call(dataDir, 'ADD', armedIds[i]!), env: crashEnv(p) })));
    armedRuns.forEach((r, i) => expectCrash(r, points[i]!, `ADD ${armedIds[i]}`));
    const armedHeld = [...reservations(dir).values()].filter((c) => c === `${armedIds[2]}\r\neth0` || c === `${armedIds[3]}\r\neth0`).length;
    assert.ok(armedHeld >= 2, `the ADDs killed after linking their address file hold it until their DEL (${armedHeld})`);

    // The lock is free: a new ADD goes through. flock waits without a timeout, so a lock left
    // held would block it for ever: given 20 s (generous on a loaded machine), then killed.
    const next = startPlugin(PODIPAM_BIN, call(dataDir, 'ADD', 'after'));
    const stuck = setTimeout(() => next.child.kill('SIGKILL'), 20_000);
    const after = await next.done;
    clearTimeout(stuck);
    assert.equal(after.signal, null, 'the ADD after the kills still waited for the lock after 20 s');
    assert.equal(after.code, 0, after.stdout);

    await delAll(dataDir, [...ids, ...armedIds, 'after']);
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
