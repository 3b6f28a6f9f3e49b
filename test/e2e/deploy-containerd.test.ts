/**
 * deploy/ as a user applies it, run on real containerd as kubelet would run it: the manifests
 * rendered by the real `kubectl kustomize` (overlays/dev: deploy/ with one etcd member, as one
 * node cannot hold three host-network members), the image `npm run image` builds imported
 * into containerd's k8s.io namespace (etcd's image name carries Debian's etcd: no registry is
 * reachable), the Secrets made by `podipam datastore certs` as its printed commands make them,
 * and each pod started through CRI by the test kubelet (test/helpers/kubelet.ts). The node is a
 * network namespace with a veth to this machine and a mount namespace where /opt/cni/bin,
 * /etc/cni/net.d, /run/podipam, /var/lib/podipam, /var/lib/cni/networks and /run/xtables.lock
 * are test directories; its CNI bin dir holds ptp and loopback, as a node's does. The API
 * server is the suite's double over HTTPS, cluster DNS a double naming the etcd Services.
 *
 * Then: etcd, then serve + controller (its dashboard answers GET / and /healthz), a v6 pool
 * made with `podipam pool create` in the controller container (`kubectl exec`'s way), then the
 * agent DaemonSet pod: install-cni puts the shim and conflist into the node's dirs, the agent
 * serves its socket (its readiness probe is `podipam agent status`), and workload sandboxes
 * started by containerd with that conflist get IPv4 and IPv6 addresses from the pools and ping
 * each other. A rolling update stops the agent pod and starts a new one: the workloads keep
 * their addresses and still ping, a new one gets new ones, no address twice, and the node's CNI
 * dirs hold the same files (ptp and loopback untouched). Last, `podipam uninstall-cni` on the
 * node removes exactly what install-cni wrote.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { NODE_CNI_BIN, NODE_CNI_CONF, PAUSE_IMAGE, startContainerd, type Containerd } from '../helpers/containerd.js';
import { criErrorText } from '../helpers/cri-client.js';
import { startClusterDns } from '../helpers/cluster-dns.js';
import { FAKE_KUBE_TOKEN, startFakeKubeApiServer } from '../helpers/fake-kube-apiserver.js';
import { importFilesImage, importImageArchive, normalizeRef, standInEtcdImage } from '../helpers/files-image.js';
import { ensureImage } from '../helpers/image.js';
import { testKubelet } from '../helpers/kubelet.js';
import { renderKustomization } from '../helpers/kustomize.js';
import { makeNodeNetns } from '../helpers/node-netns.js';
import { PODIPAM_BIN, REPO_ROOT } from '../helpers/plugin.js';
import { requireExecutable, requireRoot } from '../helpers/prereq.js';
import { makeServerCertForIp } from '../helpers/test-certs.js';
import { makeTempDir } from '../helpers/tmp.js';
import { formatPrefix, parseAddr, parsePrefix, prefixContains } from '../../src/ip/index.js';

const NODE = 'node-a';

/** name → sha256 of every file in `dir`. */
function snapshot(dir: string): Record<string, string> {
  return Object.fromEntries(
    readdirSync(dir)
      .sort()
      .map((f) => [
        f,
        createHash('sha256')
          .update(readFileSync(join(dir, f)))
          .digest('hex')
          .slice(0, 16),
      ]),
  );
}

/** The Secrets `podipam datastore certs` tells the user to create (its `kubectl create secret generic … --from-file=KEY=PATH` commands). */
function secretsFromCerts(dir: string): Record<string, Record<string, string>> {
  const r = spawnSync(PODIPAM_BIN, ['datastore', 'certs', '--dir', dir, '--members', '1', '--json'], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  const out: Record<string, Record<string, string>> = {};
  for (const cmd of (JSON.parse(r.stdout) as { commands: string[] }).commands) {
    const name = /create secret generic (\S+)/.exec(cmd)?.[1];
    assert.ok(name, cmd);
    out[name] = Object.fromEntries([...cmd.matchAll(/--from-file=([^=\s]+)=(\S+)/g)].map((m) => [m[1]!, readFileSync(m[2]!, 'utf8')]));
  }
  return out;
}

/** A workload pod on the pod network (the suite's pause image) with a busybox container to ping from. */
async function workload(rt: Containerd, name: string): Promise<{ sandbox: string; ips: string[]; ping(ip: string): Promise<string | undefined> }> {
  const uid = randomBytes(8).toString('hex');
  const logDir = join(rt.logDir, `default_${name}_${uid}`);
  mkdirSync(logDir, { recursive: true });
  let sandbox: string;
  try {
    sandbox = await rt.cri.runPodSandbox({ name, namespace: 'default', uid }, logDir);
  } catch (e) {
    throw new Error(`RunPodSandbox ${name}: ${criErrorText(e)}`, { cause: e });
  }
  const { ips } = await rt.cri.status(sandbox);
  const cfg = {
    metadata: { name, uid, namespace: 'default', attempt: 0 },
    hostname: name,
    logDirectory: logDir,
    labels: {},
    annotations: {},
    linux: {},
  };
  const ctr = await rt.cri.createContainer(
    sandbox,
    {
      metadata: { name: 'net', attempt: 0 },
      image: { image: PAUSE_IMAGE },
      command: ['/bin/busybox', 'sleep', '3600'],
      args: [],
      workingDir: '',
      envs: [],
      mounts: [],
      labels: {},
      annotations: {},
      logPath: 'net.log',
      linux: {
        securityContext: {
          capabilities: { addCapabilities: ['NET_RAW'], dropCapabilities: [] },
          privileged: false,
          namespaceOptions: {},
          readonlyRootfs: false,
          supplementalGroups: [],
          noNewPrivs: false,
        },
      },
    },
    cfg,
  );
  await rt.cri.startContainer(ctr);
  return {
    sandbox,
    ips: [...ips],
    ping: async (ip) => {
      const r = await rt.cri.execSync(ctr, ['/bin/busybox', 'ping', '-c', '1', '-W', '3', ip], 10);
      return r.exitCode === 0 ? undefined : `${name} → ${ip}: exit ${r.exitCode} ${r.stdout}${r.stderr}`;
    },
  };
}

test(
  'deploy/ on containerd as kubelet runs it: etcd, serve, the agent DaemonSet; pods get IPv4+IPv6 and ping; a rolling agent update keeps them; uninstall removes exactly what was installed',
  { timeout: 900_000 },
  async (t) => {
    const t0 = Date.now();
    requireRoot('running deploy/ on containerd');
    for (const p of ['/usr/lib/cni/ptp', '/usr/lib/cni/loopback']) requireExecutable(p);
    const image = await ensureImage();
    const { objects } = renderKustomization(join(REPO_ROOT, 'deploy', 'overlays', 'dev'));
    const poolsLine = (objects.find((o) => o.kind === 'ConfigMap') as unknown as { data: { pools: string } }).data.pools.trim().split('\n')[0]!;
    const v4Pool = parsePrefix(poolsLine.split(/\s+/)[1]!);
    const tag = `${process.pid.toString(36)}${randomBytes(2).toString('hex')}`.slice(-6);
    const work = makeTempDir('deploy-ctrd');
    const cleanups: (() => Promise<void> | void)[] = [() => work.remove()];
    const step = (what: string) => console.error(`deploy-containerd: ${what} at ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    t.after(async () => {
      for (const c of cleanups.reverse()) await Promise.resolve(c()).catch((e: Error) => console.error(`cleanup: ${e.message}`));
      step('cleaned up');
    });

    // The node: its directories, with the CNI plugins a node already has.
    const hostPaths: Record<string, string> = {};
    for (const p of [NODE_CNI_BIN, NODE_CNI_CONF, '/run/podipam', '/var/lib/podipam', '/var/lib/cni/networks']) {
      hostPaths[p] = join(work.path, 'node', p.slice(1).replace(/\//g, '_'));
      mkdirSync(hostPaths[p], { recursive: true });
    }
    hostPaths['/run/xtables.lock'] = join(work.path, 'node', 'run_xtables.lock');
    writeFileSync(hostPaths['/run/xtables.lock'], '');
    const binDir = hostPaths[NODE_CNI_BIN]!;
    const confDir = hostPaths[NODE_CNI_CONF]!;
    for (const p of ['ptp', 'loopback']) copyFileSync(`/usr/lib/cni/${p}`, join(binDir, p));
    const nodeBinBefore = snapshot(binDir);

    const netns = makeNodeNetns(tag);
    cleanups.push(() => netns.remove());
    const rt = await startContainerd({}, { netns: netns.name, mounts: hostPaths });
    cleanups.push(() => rt.stop());
    // The runtime's own socket, which the agent lists sandboxes through (runtime reconciliation).
    hostPaths['/run/containerd/containerd.sock'] = rt.socket;
    importImageArchive(rt.socket, image.archive);
    const etcdRef = String(
      (objects.find((o) => o.kind === 'StatefulSet') as unknown as { spec: { template: { spec: { containers: { image: string }[] } } } }).spec.template.spec
        .containers[0]!.image,
    );
    importFilesImage(join(work.path, 'etcd-image'), rt.socket, { ...standInEtcdImage(normalizeRef(etcdRef)) });
    step('containerd up, images imported');

    const secrets = secretsFromCerts(join(work.path, 'etcd-certs'));
    mkdirSync(join(work.path, 'kube-certs'));
    const kubeCerts = makeServerCertForIp(join(work.path, 'kube-certs'), netns.hostSide);
    const kube = await startFakeKubeApiServer({
      host: netns.hostSide,
      tls: { cert: readFileSync(kubeCerts.certFile, 'utf8'), key: readFileSync(kubeCerts.keyFile, 'utf8') },
    });
    cleanups.push(() => kube.close());
    kube.addNode(NODE);
    const dns = await startClusterDns(netns.hostSide);
    cleanups.push(() => dns.close());
    for (const n of [
      'podipam-etcd.podipam-system.svc.cluster.local',
      'podipam-etcd-0.podipam-etcd-peer.podipam-system.svc.cluster.local',
      'podipam.podipam-system.svc.cluster.local',
    ])
      dns.set(n, [netns.nodeIP]);

    const kubelet = testKubelet({
      containerd: rt,
      nodeName: NODE,
      hostIP: netns.nodeIP,
      hostPaths,
      objects,
      secrets,
      kubernetes: { host: netns.hostSide, port: kube.port, token: FAKE_KUBE_TOKEN, caCrt: readFileSync(kubeCerts.caFile, 'utf8') },
      clusterDns: { server: netns.hostSide, domain: 'cluster.local' },
      workDir: join(work.path, 'pods'),
      trace: step,
    });

    await kubelet.start('StatefulSet', 'podipam-etcd');
    step('etcd ready');
    const serve = await kubelet.start('Deployment', 'podipam-serve');
    step('serve + controller ready');
    for (const path of ['/healthz', '/']) {
      const r = await fetch(`http://${netns.nodeIP}:7420${path}`, { signal: AbortSignal.timeout(10_000) });
      const body = await r.text();
      assert.equal(r.status, 200, `GET ${path} from the serve pod: ${r.status} ${body}`);
      if (path === '/') assert.match(body, /<html/i);
    }
    const v6 = await serve.exec('controller', ['podipam', 'pool', 'create', 'pods-v6', '--cidr', 'fd10:96::/112', '--block-size', '122']);
    assert.equal(v6.exitCode, 0, v6.stdout + v6.stderr);

    const agent = await kubelet.start('DaemonSet', 'podipam-agent');
    step('agent ready');
    const installedBin = snapshot(binDir);
    const installedConf = snapshot(confDir);
    assert.deepEqual(Object.keys(installedBin), ['loopback', 'podipam', 'ptp'], "install-cni added the shim beside the node's plugins");
    assert.equal(installedBin.ptp, nodeBinBefore.ptp);
    const conflistName = Object.keys(installedConf).find((f) => f.endsWith('.conflist'));
    assert.ok(conflistName, `a conflist in the node's conf dir: ${Object.keys(installedConf).join(', ')}`);
    const conflist = JSON.parse(readFileSync(join(confDir, conflistName), 'utf8')) as { plugins: { type: string; ipam?: { type: string; agent?: string } }[] };
    for (const p of conflist.plugins) assert.ok(p.type in installedBin, `the conflist's plugin ${p.type} is in the node's CNI bin dir`);
    const status = await agent.exec('agent', ['podipam', 'agent', 'status']);
    assert.equal(status.exitCode, 0, status.stdout + status.stderr);
    assert.match(status.stdout, /masquerade: synced .*IPv4 synced .*IPv6 synced/, 'iptables in the image, with the capabilities the DaemonSet adds');
    assert.match(status.stdout, /pod cache: .* 0 errors/, status.stdout);
    // Both --in-cluster clients reached the API with the service account kubelet mounts.
    assert.ok(kube.podRequests.list + kube.podRequests.watch > 0, 'the agent listed/watched pods through the API');
    assert.match(kube.getNode(NODE)?.spec.podCIDR ?? '', /^10\.244\./, 'the controller gave the node a podCIDR from CLUSTER_CIDR');

    const pods = [await workload(rt, 'w1'), await workload(rt, 'w2')];
    step('workloads up');
    for (const p of pods) {
      assert.equal(p.ips.length, 2, `one IPv4 and one IPv6 address: ${p.ips.join(', ')}`);
      assert.ok(
        p.ips.some((ip) => prefixContains(v4Pool, parseAddr(ip))) && p.ips.some((ip) => ip.startsWith('fd10:96:')),
        `${p.ips.join(', ')}: not in ${formatPrefix(v4Pool)} and the v6 pool`,
      );
    }
    const pingAll = async (ps: typeof pods) => {
      for (const a of ps) for (const b of ps) if (a !== b) for (const ip of b.ips) assert.equal(await a.ping(ip), undefined);
    };
    await pingAll(pods);
    step('pings done');

    // Rolling update: the old agent pod goes, a new one comes from the image.
    await agent.stop();
    await kubelet.start('DaemonSet', 'podipam-agent');
    step('agent replaced');
    assert.deepEqual(snapshot(binDir), installedBin, 'the new install-cni left the bin dir as it was (its own file, same bytes; ptp and loopback untouched)');
    assert.deepEqual(snapshot(confDir), installedConf);
    for (const p of pods) assert.deepEqual((await rt.cri.status(p.sandbox)).ips, p.ips, 'a running pod keeps its addresses');
    await pingAll(pods);
    const w3 = await workload(rt, 'w3');
    const all = [...pods, w3].flatMap((p) => p.ips);
    assert.equal(new Set(all).size, all.length, `no address twice: ${all.join(', ')}`);
    assert.equal(w3.ips.length, 2);
    await pingAll([pods[0]!, w3]);

    // Pods go (CNI DEL through the agent), then the node is uninstalled.
    for (const p of [...pods, w3]) {
      await rt.cri.stopPodSandbox(p.sandbox);
      await rt.cri.removePodSandbox(p.sandbox);
    }
    const un = rt.onNode(PODIPAM_BIN, ['uninstall-cni', '--bin-dir', NODE_CNI_BIN, '--conf-dir', NODE_CNI_CONF]);
    assert.equal(un.status, 0, un.stdout + un.stderr);
    assert.deepEqual(snapshot(binDir), nodeBinBefore, 'uninstall-cni removed the shim and nothing else');
    assert.deepEqual(readdirSync(confDir), [], 'uninstall-cni removed the conflist and its record');
    step('uninstalled');
    console.error(`deploy-containerd: whole run ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  },
);
