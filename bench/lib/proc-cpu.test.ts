import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { childPids, cpuMs, threadCpuMs } from './proc-cpu.js';

test('cpuMs counts a waited-for child that burned CPU, and a running process', () => {
  const before = cpuMs('children');
  const r = spawnSync(process.execPath, ['-e', 'const t = Date.now(); while (Date.now() - t < 300);']);
  assert.equal(r.status, 0);
  assert.ok(cpuMs('children') - before >= 150, `children's CPU grew by ${cpuMs('children') - before} ms after a 300 ms busy loop`);
  assert.ok(cpuMs(process.pid) > 0, 'this process has used some CPU');
});

test('childPids finds this process’s children by command name, and only them', async () => {
  const child = spawn('sleep', ['5']);
  try {
    await new Promise((r) => child.once('spawn', r));
    assert.deepEqual(childPids('sleep'), [child.pid]);
    assert.deepEqual(childPids('no-such-command'), []);
  } finally {
    child.kill();
  }
});

test('threadCpuMs sees a few milliseconds of CPU that 10 ms ticks may not', () => {
  const before = threadCpuMs(process.pid);
  // Busy until the kernel's own account (getrusage) shows 5 ms of CPU — not 5 ms of wall time,
  // which a loaded machine may give mostly to others — and at most 5 s.
  const cpu0 = process.cpuUsage();
  const t = performance.now();
  let spent = 0;
  while (spent < 5000 && performance.now() - t < 5000) {
    const d = process.cpuUsage(cpu0);
    spent = d.user + d.system;
  }
  assert.ok(spent >= 5000, `the busy loop got only ${spent} µs of CPU in 5 s`);
  const used = threadCpuMs(process.pid) - before;
  assert.ok(used >= 4 && used < 1000, `${spent} µs of CPU (getrusage) measured as ${used} ms`);
  assert.notEqual(used % 10, 0, `not whole ticks: ${used} ms`);
});
