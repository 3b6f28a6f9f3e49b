/**
 * ip-sets through the built plugin in cluster mode on SQLite: a set of 5 created with the CLI;
 * 5 pods annotated `podipam.io/ip-set` (the runtime's pod annotations in runtimeConfig, the pod
 * in CNI_ARGS) get its 5 addresses; recreated (new container ids and uids) they get the same 5;
 * a 6th gets code 100 naming the set; pods without the annotation never get one of them, even
 * when they fill the rest of the pool; `ipset delete` is refused while the set is in use.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { PODIPAM_BIN, type PluginCall, type PluginRun, clusterCall, runCliSync, runPlugin } from '../helpers/plugin.js';
import { withTempDir } from '../helpers/tmp.js';

const SET = ['10.30.0.5', '10.30.0.6', '10.30.0.7', '10.30.0.8', '10.30.0.9'];

function podCall(db: string, cacheDir: string, command: string, id: string, pod: string, annotations?: Record<string, string>): PluginCall {
  const base = clusterCall('e2e-ipset', db, cacheDir, command, id, 'node-a');
  const config = base.config as { ipam: object };
  return {
    ...base,
    args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=${pod};K8S_POD_UID=uid-${id}`,
    config: { ...config, ...(annotations ? { runtimeConfig: { 'io.kubernetes.cri.pod-annotations': annotations } } : {}) },
  };
}

const ipOf = (r: PluginRun): string => {
  assert.equal(r.code, 0, `${r.stdout}${r.stderr}`);
  return (JSON.parse(r.stdout) as { ips: { address: string }[] }).ips[0]!.address.split('/')[0]!;
};
const errOf = (r: PluginRun): { code: number; msg: string } => {
  assert.equal(r.code, 1, `${r.stdout}${r.stderr}`);
  return JSON.parse(r.stdout) as { code: number; msg: string };
};

test(
  'an ip-set of 5 through the plugin: 5 annotated pods get its 5 addresses, again after recreation; a 6th gets code 100; other pods never get them',
  { timeout: 300_000 },
  () =>
    withTempDir('cluster-ip-set', async (dir) => {
      const db = `sqlite:${join(dir, 'ipam.db')}`;
      const cacheDir = join(dir, 'cache');
      const cli = (args: string[]) => runCliSync(db, args);
      assert.equal(cli(['pool', 'create', 'small', '--cidr', '10.30.0.0/28', '--block-size', '28']).code, 0); // 13 usable addresses
      const created = cli(['ipset', 'create', 'web', '--pool', 'small', '--addresses', '10.30.0.5-10.30.0.9']);
      assert.equal(created.code, 0, created.stderr);
      assert.match(created.stdout, /ip-set "web" created in pool "small": 5 addresses 10\.30\.0\.5-10\.30\.0\.9/);
      const ann = { 'podipam.io/ip-set': 'web' };
      const run = (command: string, id: string, pod: string, a?: Record<string, string>) => runPlugin(PODIPAM_BIN, podCall(db, cacheDir, command, id, pod, a));

      const first: string[] = [];
      for (let i = 0; i < 5; i++) first.push(ipOf(await run('ADD', `a${i}`, `web-${i}`, ann)));
      assert.deepEqual([...first].sort(), SET);
      assert.equal(ipOf(await run('ADD', 'a2', 'web-2', ann)), first[2], 'a repeated ADD returns what the pod holds');

      const shown = JSON.parse(cli(['ipset', 'show', 'web', '-o', 'json']).stdout) as {
        held: number;
        addresses: { address: string; pod?: string; namespace?: string }[];
      };
      assert.equal(shown.held, 5);
      assert.deepEqual(shown.addresses.map((a) => `${a.address} ${a.namespace}/${a.pod}`).sort(), first.map((a, i) => `${a} default/web-${i}`).sort());
      const refused = cli(['ipset', 'delete', 'web']);
      assert.notEqual(refused.code, 0);
      assert.match(refused.stderr, /Cannot delete ip-set "web": 5 of its addresses are held: 10\.30\.0\.5 \(pod default\/web-\d, handle /);

      const sixth = errOf(await run('ADD', 'a5', 'web-5', ann));
      assert.equal(sixth.code, 100);
      assert.match(sixth.msg, /no free address in ip-set "web": 5 of its 5 addresses are held/);
      const unknown = errOf(await run('ADD', 'u0', 'other', { 'podipam.io/ip-set': 'nope' }));
      assert.equal(unknown.code, 7);
      assert.match(unknown.msg, /annotation podipam\.io\/ip-set="nope" on pod default\/other: ip-set "nope" does not exist/);

      // The rest of the pool (13 - 5 = 8) to pods without the annotation; a 9th finds it full.
      const plain: string[] = [];
      for (let i = 0; i < 8; i++) plain.push(ipOf(await run('ADD', `p${i}`, `plain-${i}`)));
      assert.ok(
        plain.every((a) => !SET.includes(a)),
        `plain pods got ${plain.join(', ')}`,
      );
      assert.equal(errOf(await run('ADD', 'p8', 'plain-8')).code, 100);

      // Recreated: all 5 deleted, 5 new pods (new container ids, new uids) get the same 5.
      for (let i = 0; i < 5; i++) assert.equal((await run('DEL', `a${i}`, `web-${i}`, ann)).code, 0);
      assert.equal(errOf(await run('ADD', 'p8', 'plain-8')).code, 100, 'freed set addresses do not go to plain pods');
      const second: string[] = [];
      for (let i = 0; i < 5; i++) second.push(ipOf(await run('ADD', `b${i}`, `web-new-${i}`, ann)));
      assert.deepEqual([...second].sort(), SET);
      assert.equal(errOf(await run('ADD', 'b5', 'web-new-5', ann)).code, 100);

      for (let i = 0; i < 5; i++) assert.equal((await run('DEL', `b${i}`, `web-new-${i}`, ann)).code, 0);
      const deleted = cli(['ipset', 'delete', 'web']);
      assert.equal(deleted.code, 0, deleted.stderr);
      assert.deepEqual(JSON.parse(cli(['ipset', 'list', '-o', 'json']).stdout), { items: [] });
      // The set's addresses are the pool's again.
      assert.ok(SET.includes(ipOf(await run('ADD', 'p8', 'plain-8'))));
      assert.deepEqual(JSON.parse(cli(['ipam', 'check', '--json']).stdout), { leaks: [], problems: [] });
    }),
);
