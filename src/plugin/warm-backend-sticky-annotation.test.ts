/**
 * `podipam.io/sticky` through the warm-pool back end, in-process on a real SQLite datastore file
 * and a real resource DB, with a pod cache (PodDirectory) and no API server: the annotation, on
 * the pod or on its namespace (from the cache), decides whether a recreated pod gets its address
 * back; "false" on the pod overrides its namespace and a StatefulSet owner the cache knows.
 */
import { cachedPod, mapDirectory } from '../../test/helpers/pod-directory.js';
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type WarmRig, startWarmRig, stopWarmRig, warmConf } from '../../test/helpers/warm-rig.js';
import { ANNOTATION } from '../model/placement.js';
import type { WarmOptions } from '../warm/warm-service.js';
import type { IpamRequest } from './ipam-backend.js';

const root = mkdtempSync(join(tmpdir(), 'podipam-warm-sticky-ann-'));
after(() => rmSync(root, { recursive: true, force: true }));

const args = (namespace: string, name: string, uid?: string): Map<string, string> =>
  new Map([['K8S_POD_NAMESPACE', namespace], ['K8S_POD_NAME', name], ...(uid ? [['K8S_POD_UID', uid] as [string, string]] : [])]);

const directory = mapDirectory;
const cached = cachedPod;

describe('warm pool: podipam.io/sticky through the back end', () => {
  const STICKY_FOR = 60_000;
  let seq = 0;
  const rig = (opts: Partial<WarmOptions> = {}): Promise<WarmRig> =>
    startWarmRig(
      {
        root,
        n: ++seq,
        pools: [{ name: 'v4', cidr: '10.79.0.0/16' }],
        options: {
          node: 'n1',
          minIdle: 4,
          maxIdle: 8,
          capacity: 64,
          cooldownMs: 1_000,
          stickyForMs: STICKY_FOR,
          tickMs: 3_600_000,
          writeDelayMs: 3_600_000,
          gcIntervalMs: 3_600_000,
        },
      },
      opts,
    );
  const req = (cid: string, namespace: string, name: string, annotations?: Record<string, string>): IpamRequest => ({
    containerId: cid,
    ifname: 'eth0',
    cniArgs: args(namespace, name, `uid-${cid}`),
    pod: { namespace, name, uid: `uid-${cid}` },
    ...(annotations ? { podAnnotations: annotations } : {}),
    conf: warmConf,
  });
  const addr = async (r: WarmRig, q: IpamRequest): Promise<string> => (await r.warm.add(q)).ips[0]!.address;

  it('"true" on the pod, or on its namespace (from the pod cache), keeps a recreated pod\'s address; "false" on the pod overrides the namespace and a StatefulSet owner', async () => {
    const dir = directory([{ ...cached('db', 'pg-0', 'StatefulSet'), uid: undefined }], { team: { [ANNOTATION.sticky]: 'true' } });
    const r = await rig({ pods: dir });
    try {
      // No policy, no kubeconfig: only the annotation makes these sticky.
      const a = await addr(r, req('a1', 'web', 'nginx-1', { [ANNOTATION.sticky]: 'true' }));
      const t = await addr(r, req('t1', 'team', 'job-1'));
      const plain = await addr(r, req('p1', 'web', 'nginx-2'));
      await r.warm.maintain();
      for (const [cid, ns, name] of [
        ['a1', 'web', 'nginx-1'],
        ['t1', 'team', 'job-1'],
        ['p1', 'web', 'nginx-2'],
      ] as const)
        await r.warm.del(req(cid, ns, name));
      assert.equal(r.warm.report().stickyReservations, 2, "the annotated pod and the annotated namespace's");
      r.clock.t += 5_000;
      assert.equal(await addr(r, req('a2', 'web', 'nginx-1', { [ANNOTATION.sticky]: 'true' })), a);
      assert.equal(await addr(r, req('t2', 'team', 'job-1')), t);
      assert.notEqual(await addr(r, req('p2', 'web', 'nginx-2')), plain);
      assert.equal(r.warm.report().pods.stickyHits, 2);
      // A StatefulSet pod (owner from the cache) is sticky by default; "false" turns that off.
      await addr(r, req('s0', 'db', 'pg-0'));
      await r.warm.del(req('s0', 'db', 'pg-0'));
      assert.equal(r.warm.report().stickyReservations, 1, 'a StatefulSet pod the cache knows is sticky with no kubeconfig');
      const s1 = await addr(r, req('s1', 'db', 'pg-0', { [ANNOTATION.sticky]: 'false' }));
      await r.warm.del(req('s1', 'db', 'pg-0'));
      assert.equal(r.warm.report().stickyReservations, 1, '"false": no reservation, the earlier one untouched');
      assert.equal(r.warm.report().pods.stickyHits, 2, 'and it did not take the reservation');
      assert.ok(s1);
      // "false" on the pod beats "true" on its namespace.
      await addr(r, req('t3', 'team', 'job-2', { [ANNOTATION.sticky]: 'false' }));
      await r.warm.del(req('t3', 'team', 'job-2'));
      assert.equal(r.warm.report().stickyReservations, 1);
      assert.ok(dir.lookups > 0, 'the cache was asked');
    } finally {
      await stopWarmRig(r);
    }
  });
});
