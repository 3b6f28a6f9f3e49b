import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { childPids, cpuMs } from './proc-cpu.js';

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
