import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CniRuntime, pluginStdin } from './cni-runtime.js';
import { parseConfList } from './conf-list.js';
import { ChainError, PluginError } from './errors.js';

const RESULT = '{"cniVersion":"1.0.0","ips":[{"address":"10.3.0.2/24"}],"dns":{}}';

/** Plugins as shell scripts that log "<verb> <name>" and keep their stdin per verb. */
function bench(bodies: Record<string, string>) {
  const dir = mkdtempSync(join(tmpdir(), 'podipam-rtunit-'));
  for (const [name, body] of Object.entries(bodies)) {
    writeFileSync(
      join(dir, name),
      `#!/bin/sh\nin=$(cat)\nprintf '%s' "$in" > ${dir}/stdin.$CNI_COMMAND.${name}\necho "$CNI_COMMAND ${name}" >> ${dir}/calls\n${body}\n`,
    );
    chmodSync(join(dir, name), 0o755);
  }
  const rt = new CniRuntime({ binDirs: [dir], cacheDir: join(dir, 'cache'), timeoutMs: 10_000 });
  return {
    rt,
    list: (conf: object) => parseConfList('test.conflist', Buffer.from(JSON.stringify(conf))),
    calls: () => (existsSync(join(dir, 'calls')) ? readFileSync(join(dir, 'calls'), 'utf8').trim().split('\n') : []),
    stdin: (verb: string, name: string) => JSON.parse(readFileSync(join(dir, `stdin.${verb}.${name}`), 'utf8')),
    done: () => rmSync(dir, { recursive: true, force: true }),
  };
}

test('pluginStdin: name and cniVersion of the list, runtimeConfig only for declared capabilities, keys sorted', () => {
  const list = parseConfList(
    't',
    Buffer.from(
      JSON.stringify({
        cniVersion: '1.0.0',
        name: 'n',
        plugins: [{ type: 'p', name: 'own', capabilities: { portMappings: true, bandwidth: false }, z: 1, a: 2 }],
      }),
    ),
  );
  const rt = { containerId: 'c', netns: '', ifname: 'eth0', capabilityArgs: { portMappings: [{ hostPort: 1 }], bandwidth: { rate: 1 }, ips: ['10.0.0.1'] } };
  assert.equal(
    pluginStdin(list, list.plugins[0]!, undefined, rt).toString(),
    '{"a":2,"capabilities":{"bandwidth":false,"portMappings":true},"cniVersion":"1.0.0","name":"n","runtimeConfig":{"portMappings":[{"hostPort":1}]},"type":"p","z":1}',
  );
  assert.equal(
    pluginStdin(list, list.plugins[0]!, undefined, { ...rt, capabilityArgs: {} })
      .toString()
      .includes('runtimeConfig'),
    false,
  );
});

test('ADD chains prevResult forward and caches the last result; DEL runs in reverse with it', async () => {
  const b = bench({ p1: `echo '${RESULT}'`, p2: '[ "$CNI_COMMAND" = ADD ] && printf \'%s\' "$in" | sed \'s/.*"prevResult":\\(.*\\),"type".*/\\1/\'; exit 0' });
  try {
    const list = b.list({ cniVersion: '1.0.0', name: 'n', plugins: [{ type: 'p1' }, { type: 'p2' }] });
    const rt = { containerId: 'c1', netns: '/x', ifname: 'eth0' };
    const r = await b.rt.add(list, rt);
    assert.deepEqual(JSON.parse(JSON.stringify(r)), { cniVersion: '1.0.0', ips: [{ address: '10.3.0.2/24' }] });
    assert.deepEqual(b.stdin('ADD', 'p2').prevResult, { cniVersion: '1.0.0', ips: [{ address: '10.3.0.2/24' }] });
    assert.equal(b.stdin('ADD', 'p1').prevResult, undefined);
    await b.rt.check(list, rt);
    assert.deepEqual(b.stdin('CHECK', 'p1').prevResult, { cniVersion: '1.0.0', ips: [{ address: '10.3.0.2/24' }] });
    await b.rt.del(list, rt);
    assert.deepEqual(b.calls(), ['ADD p1', 'ADD p2', 'CHECK p1', 'CHECK p2', 'DEL p2', 'DEL p1']);
    assert.deepEqual(b.stdin('DEL', 'p1').prevResult, { cniVersion: '1.0.0', ips: [{ address: '10.3.0.2/24' }] });
    assert.equal(b.rt.cache.get('n', 'c1', 'eth0'), undefined);
  } finally {
    b.done();
  }
});

test('DEL asks every plugin even when one fails, keeps the cached result for a retry', async () => {
  const b = bench({
    ok: `[ "$CNI_COMMAND" = ADD ] && echo '${RESULT}'; exit 0`,
    flaky: `[ "$CNI_COMMAND" = DEL ] && [ ! -e "$(dirname "$0")/fixed" ] && { echo '{"code":11,"msg":"busy"}'; exit 1; }; [ "$CNI_COMMAND" = ADD ] && printf '%s' '${RESULT}'; exit 0`,
  });
  try {
    const list = b.list({ cniVersion: '1.0.0', name: 'n', plugins: [{ type: 'ok' }, { type: 'flaky' }] });
    const rt = { containerId: 'c1', netns: '', ifname: 'eth0' };
    await b.rt.add(list, rt);
    await assert.rejects(
      b.rt.del(list, rt),
      (e: unknown) => e instanceof ChainError && e.plugin === 'flaky' && e.cause instanceof PluginError && e.cause.code === 11,
    );
    assert.deepEqual(b.calls().slice(2), ['DEL flaky', 'DEL ok']);
    assert.ok(b.rt.cache.get('n', 'c1', 'eth0'), 'the cache entry went although DEL failed');
    writeFileSync(join(b.rt.cache.dir, '..', '..', 'fixed'), '');
    await b.rt.del(list, rt);
    assert.equal(b.rt.cache.get('n', 'c1', 'eth0'), undefined);
  } finally {
    b.done();
  }
});

test('CHECK below 0.4.0 is refused, disableCheck skips it; STATUS is asked from 1.1.0 and reports code 50', async () => {
  const b = bench({ p: `[ "$CNI_COMMAND" = STATUS ] && { echo '{"code":50,"msg":"no addresses left"}'; exit 1; }; echo '${RESULT}'` });
  try {
    const rt = { containerId: 'c1', netns: '/x', ifname: 'eth0' };
    await assert.rejects(
      b.rt.check(b.list({ cniVersion: '0.3.1', name: 'n', plugins: [{ type: 'p' }] }), rt),
      /configuration version "0.3.1" does not support the CHECK command/,
    );
    await b.rt.check(b.list({ cniVersion: '1.0.0', name: 'n', disableCheck: true, plugins: [{ type: 'p' }] }), rt);
    assert.equal(await b.rt.status(b.list({ cniVersion: '1.0.0', name: 'n', plugins: [{ type: 'p' }] })), false);
    assert.deepEqual(b.calls(), []);
    await assert.rejects(
      b.rt.status(b.list({ cniVersion: '1.1.0', name: 'n', plugins: [{ type: 'p' }] })),
      (e: unknown) => e instanceof ChainError && e.cause instanceof PluginError && e.cause.code === 50,
    );
    assert.deepEqual(b.calls(), ['STATUS p']);
  } finally {
    b.done();
  }
});

test('ADD refuses bad container ids and interface names before running anything', async () => {
  const b = bench({ p: `echo '${RESULT}'` });
  try {
    const list = b.list({ cniVersion: '1.0.0', name: 'n', plugins: [{ type: 'p' }] });
    await assert.rejects(b.rt.add(list, { containerId: 'a/b', netns: '/x', ifname: 'eth0' }), /container id "a\/b": invalid characters/);
    await assert.rejects(
      b.rt.add(list, { containerId: 'c', netns: '/x', ifname: 'much-too-long-name0' }),
      /interface name "much-too-long-name0": interface name is too long/,
    );
    assert.deepEqual(b.calls(), []);
  } finally {
    b.done();
  }
});
