import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execPlugin, type PluginArgs } from './exec-plugin.js';
import { findPlugin } from './find-plugin.js';
import { PluginError, PluginNotFoundError, PluginTimeoutError } from './errors.js';

const ARGS: PluginArgs = {
  command: 'ADD',
  containerId: 'c1',
  netns: '/var/run/netns/x',
  ifname: 'eth0',
  args: [
    ['A', '1'],
    ['B', '2'],
  ],
  path: ['/d1', '/d2'],
};

function scripts(bodies: Record<string, string>): { dir: string; done: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'podipam-exec-'));
  for (const [name, body] of Object.entries(bodies)) {
    writeFileSync(join(dir, name), `#!/bin/sh\n${body}\n`);
    chmodSync(join(dir, name), 0o755);
  }
  return { dir, done: () => rmSync(dir, { recursive: true, force: true }) };
}

test('execPlugin passes the CNI environment and stdin, returns stdout', async () => {
  const s = scripts({ p: 'echo "$CNI_COMMAND|$CNI_CONTAINERID|$CNI_NETNS|$CNI_IFNAME|$CNI_ARGS|$CNI_PATH|$(cat)"' });
  try {
    const out = await execPlugin(join(s.dir, 'p'), 'p', Buffer.from('{"x":1}'), ARGS, { timeoutMs: 10_000 });
    assert.equal(out, 'ADD|c1|/var/run/netns/x|eth0|A=1;B=2|/d1:/d2|{"x":1}\n');
  } finally {
    s.done();
  }
});

test('execPlugin parses the CNI error JSON of a failing plugin into a PluginError', async () => {
  const s = scripts({
    cni: 'echo \'{"code": 11, "msg": "try again", "details": "busy"}\'; exit 1',
    garbage: 'echo "segfault at 0x0 <oops>"; exit 2',
    quiet: 'echo "only stderr" >&2; exit 3',
    crash: 'kill -SEGV $$',
  });
  try {
    const run = (n: string) => execPlugin(join(s.dir, n), n, Buffer.alloc(0), ARGS, { timeoutMs: 10_000 });
    await assert.rejects(
      run('cni'),
      (e: unknown) =>
        e instanceof PluginError &&
        e.code === 11 &&
        e.msg === 'try again' &&
        e.details === 'busy' &&
        e.exitCode === 1 &&
        e.message === 'plugin "cni" ADD: CNI error 11: try again; busy',
    );
    await assert.rejects(
      run('garbage'),
      (e: unknown) =>
        e instanceof PluginError && e.code === undefined && /exit status 2\) but its error message is not JSON: "segfault at 0x0 <oops>"/.test(e.message),
    );
    await assert.rejects(
      run('quiet'),
      (e: unknown) => e instanceof PluginError && e.exitCode === 3 && /"only stderr"/.test(e.message) && e.stderr === 'only stderr\n',
    );
    await assert.rejects(run('crash'), (e: unknown) => e instanceof PluginError && e.signal === 'SIGSEGV' && /killed by SIGSEGV/.test(e.message));
  } finally {
    s.done();
  }
});

test('execPlugin kills a hanging plugin and its children after the timeout', async () => {
  const s = scripts({});
  const pidFile = join(s.dir, 'child.pid');
  writeFileSync(join(s.dir, 'hang'), `#!/bin/sh\nsleep 30 &\necho $! > ${pidFile}\nwait\n`);
  chmodSync(join(s.dir, 'hang'), 0o755);
  try {
    const t0 = performance.now();
    await assert.rejects(
      execPlugin(join(s.dir, 'hang'), 'hang', Buffer.alloc(0), ARGS, { timeoutMs: 300 }),
      (e: unknown) => e instanceof PluginTimeoutError && e.timeoutMs === 300 && /no answer after 300 ms/.test(e.message),
    );
    const ms = performance.now() - t0;
    assert.ok(ms < 5000, `took ${ms} ms`);
    const child = Number(readFileSync(pidFile, 'utf8'));
    let alive = true;
    for (let i = 0; i < 50 && alive; i++) {
      alive = existsSync(`/proc/${child}`) && !readFileSync(`/proc/${child}/stat`, 'utf8').includes(') Z ');
      if (alive) await new Promise((r) => setTimeout(r, 20));
    }
    assert.ok(!alive, `the plugin's child ${child} survived the timeout`);
  } finally {
    s.done();
  }
});

test('findPlugin: first regular file along the dirs; path separators refused', () => {
  const a = scripts({ p: 'true' });
  const b = scripts({ p: 'true', q: 'true' });
  mkdirSync(join(a.dir, 'q'));
  try {
    assert.equal(findPlugin('p', [a.dir, b.dir]), join(a.dir, 'p'));
    assert.equal(findPlugin('q', [a.dir, b.dir]), join(b.dir, 'q'), 'a directory named q is not a plugin');
    assert.throws(
      () => findPlugin('../p', [a.dir]),
      (e: unknown) => e instanceof PluginNotFoundError && /invalid plugin name: "..\/p"/.test(e.message),
    );
    assert.throws(() => findPlugin('/bin/sh', [a.dir]), PluginNotFoundError);
    assert.throws(
      () => findPlugin('nope', [a.dir, b.dir]),
      (e: unknown) => e instanceof PluginNotFoundError && e.message === `failed to find plugin "nope" in path [${a.dir} ${b.dir}]`,
    );
  } finally {
    a.done();
    b.done();
  }
});
