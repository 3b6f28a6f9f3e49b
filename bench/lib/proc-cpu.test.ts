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
  const t = performance.now();
  while (performance.now() - t < 5);
  const used = threadCpuMs(process.pid) - before;
  assert.ok(used >= 2 && used < 1000, `5 ms of busy loop measured as ${used} ms`);
  assert.notEqual(used % 10, 0, `not whole ticks: ${used} ms`);
});
