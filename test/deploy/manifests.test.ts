/**
 * deploy/: every object `kubectl kustomize deploy/` renders (test/helpers/kustomize.ts)
 * validated against the Kubernetes API schemas (kubernetes-models), RBAC exactly as small as
 * documented, and images, paths, ports, sockets and flags consistent across the manifests, the
 * systemd units, the Dockerfile and the CLI that the containers run.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { load } from 'js-yaml';
import type { Command } from 'commander';
import { buildProgram } from '../../src/cli/index.js';
import { parsePrefix, prefixOverlaps } from '../../src/ip/index.js';
import { REPO_ROOT } from '../helpers/plugin.js';
import { containersOf, podSpecOf, renderKustomization, type Container, type K8sObject } from '../helpers/kustomize.js';

const DEPLOY = join(REPO_ROOT, 'deploy');
const BASE = join(DEPLOY, 'base');
const VERSION = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const IMAGE = `podipam/podipam:${VERSION}`;
const { objects } = renderKustomization(DEPLOY);
// deploy/ applies base/ as it is; base/ holds the manifests, the namespace, labels and images.
const { kustomization } = renderKustomization(BASE);
const dev = renderKustomization(join(DEPLOY, 'overlays', 'dev')).objects;

function find(kind: string, name: string): K8sObject {
  const o = objects.find((x) => x.kind === kind && x.metadata.name === name);
  assert.ok(o, `deploy/ has no ${kind} ${name}`);
  return o;
}
function container(o: K8sObject, name: string): Container {
  const c = containersOf(o).find((x) => x.name === name);
  assert.ok(c, `${o.kind} ${o.metadata.name} has no container ${name}`);
  return c;
}
/** "--flag=value" arguments of a command line. */
function flags(argv: readonly string[]): Map<string, string> {
  return new Map(argv.filter((a) => a.startsWith('--')).map((a) => [a.split('=')[0]!, a.includes('=') ? a.slice(a.indexOf('=') + 1) : '']));
}

/** The kubernetes-models class for an object's apiVersion and kind. */
async function modelOf(o: K8sObject): Promise<new (data: unknown) => { validate(): void }> {
  const [group, version] = o.apiVersion.includes('/') ? o.apiVersion.split('/') : ['', o.apiVersion];
  const mod = (await import(`kubernetes-models/${group ? `${group}/` : ''}${version}/${o.kind}`)) as Record<string, new (d: unknown) => { validate(): void }>;
  const Model = mod[o.kind];
  assert.ok(Model, `kubernetes-models has no ${o.apiVersion} ${o.kind}`);
  return Model;
}

test('base/kustomization.yaml lists every manifest in deploy/base/ and renders them all into the namespace', () => {
  assert.deepEqual((load(readFileSync(join(DEPLOY, 'kustomization.yaml'), 'utf8')) as { resources: string[] }).resources, ['base']);
  assert.deepEqual(
    readdirSync(DEPLOY).filter((f) => f.endsWith('.yaml')),
    ['kustomization.yaml'],
    'deploy/ itself holds only the kustomization that applies base/',
  );
  const files = readdirSync(BASE)
    .filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml')
    .sort();
  assert.deepEqual([...kustomization.resources].sort(), files);
  assert.ok(objects.length >= 12, `rendered ${objects.length} objects`);
  for (const o of objects) {
    if (['Namespace', 'ClusterRole', 'ClusterRoleBinding'].includes(o.kind)) assert.equal(o.metadata.namespace, undefined, `${o.kind} ${o.metadata.name}`);
    else assert.equal(o.metadata.namespace, 'podipam-system', `${o.kind} ${o.metadata.name}`);
    assert.equal(o.metadata.labels?.['app.kubernetes.io/version'], VERSION);
  }
  assert.equal(new Set(objects.map((o) => `${o.kind}/${o.metadata.name}`)).size, objects.length, 'no duplicate objects');
});

test('every rendered object, of deploy/ and of overlays/dev, is valid against the Kubernetes API schema (kubernetes-models)', async () => {
  for (const o of [...objects, ...dev]) {
    const Model = await modelOf(o);
    assert.doesNotThrow(() => new Model(o).validate(), `${o.kind} ${o.metadata.name}`);
  }
  // The validation is real: a wrong type is caught.
  const ds = structuredClone(find('DaemonSet', 'podipam-agent')) as any;
  ds.spec.template.spec.containers[0].ports = [{ containerPort: 'seventy' }];
  const DaemonSet = await modelOf(ds);
  assert.throws(() => new DaemonSet(ds).validate(), /containerPort/);
});

test('RBAC: the controller may get/list/watch/patch nodes; the agent get/list/watch pods and namespaces, get/patch nodes; nothing more', () => {
  const rules = (name: string) => find('ClusterRole', name).rules as { apiGroups: string[]; resources: string[]; verbs: string[] }[];
  assert.deepEqual(rules('podipam-controller'), [{ apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch', 'patch'] }]);
  assert.deepEqual(rules('podipam-agent'), [
    { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] },
    { apiGroups: [''], resources: ['namespaces'], verbs: ['get', 'list', 'watch'] },
    { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'patch'] },
  ]);
  assert.deepEqual(
    objects
      .filter((o) => ['Role', 'RoleBinding', 'ClusterRole', 'ClusterRoleBinding'].includes(o.kind))
      .map((o) => `${o.kind}/${o.metadata.name}`)
      .sort(),
    ['ClusterRole/podipam-agent', 'ClusterRole/podipam-controller', 'ClusterRoleBinding/podipam-agent', 'ClusterRoleBinding/podipam-controller'],
  );
  // Each binding gives its role to the service account the workload runs as.
  for (const [workload, sa] of [
    [find('DaemonSet', 'podipam-agent'), 'podipam-agent'],
    [find('Deployment', 'podipam-serve'), 'podipam-controller'],
  ] as const) {
    assert.equal(podSpecOf(workload)!.serviceAccountName, sa);
    find('ServiceAccount', sa);
    const b = find('ClusterRoleBinding', sa) as any;
    assert.deepEqual(b.roleRef, { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: sa });
    assert.deepEqual(b.subjects, [{ kind: 'ServiceAccount', name: sa, namespace: 'podipam-system' }]);
  }
  assert.equal(podSpecOf(find('StatefulSet', 'podipam-etcd'))!.serviceAccountName, undefined, 'etcd gets no API access');
});

test('every podipam container runs the image of this version; the kustomization pins the same tag', () => {
  const all = objects.flatMap((o) => containersOf(o).map((c) => ({ o, c })));
  const ours = all.filter(({ c }) => c.image.startsWith('podipam/'));
  assert.deepEqual([...new Set(ours.map(({ c }) => c.image))], [IMAGE]);
  assert.equal(ours.length, 6, ours.map(({ o, c }) => `${o.metadata.name}/${c.name}`).join(', '));
  assert.deepEqual(kustomization.images, [{ name: 'podipam/podipam', newTag: VERSION }]);
  assert.deepEqual(
    all.filter(({ c }) => !c.image.startsWith('podipam/')).map(({ c }) => c.name),
    ['etcd'],
  );
  const dockerfile = readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8');
  assert.match(dockerfile, new RegExp(`docker build -t ${IMAGE.replace(/[./]/g, '\\$&')} `));
});

test('the DaemonSet: host network, system-node-critical, every taint tolerated, the host paths mounted where they are', () => {
  const ds = find('DaemonSet', 'podipam-agent');
  const spec = podSpecOf(ds)!;
  assert.equal(spec.hostNetwork, true);
  assert.equal(spec.priorityClassName, 'system-node-critical');
  assert.deepEqual(spec.tolerations, [{ operator: 'Exists' }]);
  const hostPaths = new Map<string, string>((spec.volumes as any[]).filter((v) => v.hostPath).map((v) => [v.name, v.hostPath.path]));
  assert.deepEqual([...hostPaths.values()].sort(), [
    '/etc/cni/net.d',
    '/opt/cni/bin',
    '/run/containerd/containerd.sock',
    '/run/podipam',
    '/run/xtables.lock',
    '/var/lib/cni/networks',
    '/var/lib/podipam',
  ]);
  for (const c of containersOf(ds)) {
    for (const m of (c.volumeMounts as { name: string; mountPath: string }[]) ?? []) {
      if (hostPaths.has(m.name)) assert.equal(m.mountPath, hostPaths.get(m.name), `${c.name} mounts ${m.name} at the host's path`);
    }
  }
  const agent = container(ds, 'agent');
  const install = container(ds, 'install-cni');
  assert.equal(spec.initContainers.length, 1);
  assert.deepEqual(install.command!.slice(0, 2), ['podipam', 'install-cni']);
  assert.deepEqual(agent.command!.slice(0, 2), ['podipam', 'agent']);
  const inst = flags(install.command!);
  const ag = flags(agent.command!);
  assert.equal(inst.get('--agent-socket'), ag.get('--socket'), 'the config names the socket the agent listens on');
  assert.equal(ag.get('--socket'), '/run/podipam/agent.sock');
  assert.equal(inst.get('--backend'), 'agent');
  assert.equal(ag.get('--data-dir'), '/var/lib/podipam/agent');
  assert.ok(ag.has('--in-cluster'), 'the agent watches its pods and the namespaces with its service account (the RBAC above)');
  assert.notEqual(spec.automountServiceAccountToken, false, 'the agent needs its service account token');
  assert.equal(ag.get('--realtime-priority'), '1', 'the agent runs under SCHED_RR 1 so pod starts do not wait for a CPU');
  const mounted = (c: Container) => new Set(((c.volumeMounts as { mountPath: string }[]) ?? []).map((m) => m.mountPath));
  assert.ok(mounted(install).has(inst.get('--bin-dir')!) && mounted(install).has(inst.get('--conf-dir')!));
  assert.deepEqual((agent.readinessProbe as any).exec.command, ['podipam', 'agent', 'status']);
  // Runtime reconciliation: the endpoint from the ConfigMap, its socket mounted read-only where the endpoint names it.
  assert.equal(ag.get('--runtime-endpoint'), '$(PODIPAM_RUNTIME_ENDPOINT)');
  assert.equal((find('ConfigMap', 'podipam-config') as any).data.PODIPAM_RUNTIME_ENDPOINT, 'unix:///run/containerd/containerd.sock');
  assert.ok(
    ((agent.volumeMounts as { mountPath: string; readOnly?: boolean }[]) ?? []).some(
      (m) => m.mountPath === '/run/containerd/containerd.sock' && m.readOnly === true,
    ),
  );
  // The agent keeps the node masquerade (the agent config does not masquerade): the capability it needs for iptables.
  assert.ok(!ag.has('--no-masquerade'));
  // NET_ADMIN, NET_RAW for iptables; SYS_NICE for --realtime-priority; nothing else.
  assert.deepEqual((agent.securityContext as any).capabilities, { drop: ['ALL'], add: ['NET_ADMIN', 'NET_RAW', 'SYS_NICE'] });
  assert.deepEqual((install.securityContext as any).capabilities, { drop: ['ALL'] }, 'install-cni writes files only');
  assert.match(readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8'), /apt-get install .*\biptables\b/, 'the image has iptables for the agent');
});

test('the Deployment: serve and the controller run as non-root; the probe, the port and the Service agree', () => {
  const dep = find('Deployment', 'podipam-serve');
  const spec = podSpecOf(dep)!;
  assert.equal(spec.securityContext.runAsNonRoot, true);
  const serve = container(dep, 'serve');
  const port = Number(flags(serve.command!).get('--listen')!.split(':')[1]);
  assert.equal((serve.ports as any[])[0].containerPort, port);
  assert.equal((serve.readinessProbe as any).httpGet.path, '/healthz');
  assert.equal((serve.readinessProbe as any).httpGet.port, port);
  const svc = find('Service', 'podipam') as any;
  assert.equal(svc.spec.ports[0].targetPort, port);
  assert.deepEqual(svc.spec.selector, (dep.spec as any).selector.matchLabels);
  assert.deepEqual(svc.spec.selector, (dep.spec as any).template.metadata.labels && { 'app.kubernetes.io/name': 'podipam-serve' });
  assert.deepEqual(container(dep, 'controller').command!.slice(0, 3), ['podipam', 'controller', '--in-cluster']);
});

test('every $(VAR) a container uses is defined, and the etcd Service is the datastore the ConfigMap names', () => {
  const cm = find('ConfigMap', 'podipam-config') as any;
  for (const o of objects) {
    for (const c of containersOf(o)) {
      const defined = new Set<string>([
        ...((c.env as { name: string }[]) ?? []).map((e) => e.name),
        ...(((c.envFrom as any[]) ?? []).some((e) => e.configMapRef?.name === 'podipam-config') ? Object.keys(cm.data) : []),
      ]);
      for (const m of (c.command ?? []).join(' ').matchAll(/\$\(([A-Z_]+)\)/g))
        assert.ok(defined.has(m[1]!), `${o.metadata.name}/${c.name} uses $(${m[1]}) without defining it`);
    }
  }
  const etcd = find('Service', 'podipam-etcd') as any;
  assert.equal(cm.data.PODIPAM_DATASTORE, `etcds://podipam-etcd.podipam-system.svc:${etcd.spec.ports[0].port}`);
  for (const line of String(cm.data.pools).trim().split('\n')) assert.match(line, /^[a-z0-9.-]+ [0-9a-f.:]+\/\d+ \d+$/, `pools line ${JSON.stringify(line)}`);
});

test('every flag the manifests and systemd units pass is one the podipam CLI defines', () => {
  const program = buildProgram();
  const commandOf = (path: readonly string[]): Command => {
    let cmd: Command = program;
    for (const name of path) {
      const next = cmd.commands.find((c) => c.name() === name);
      assert.ok(next, `podipam has no command "${path.join(' ')}"`);
      cmd = next;
    }
    return cmd;
  };
  const check = (where: string, argv: readonly string[]): void => {
    const words = argv.filter((a) => !a.startsWith('-'));
    const path = words[0] === 'agent' && words[1] === 'status' ? ['agent', 'status'] : [words[0]!];
    const cmd = commandOf(path);
    const known = new Set([...cmd.options, ...program.options].flatMap((o) => [o.long, o.short]).filter(Boolean));
    for (const f of flags(argv).keys()) assert.ok(known.has(f), `${where}: podipam ${path.join(' ')} has no ${f}`);
  };
  for (const o of objects) for (const c of containersOf(o)) if (c.command?.[0] === 'podipam') check(`${o.metadata.name}/${c.name}`, c.command.slice(1));
  for (const unit of ['podipam-agent.service', 'podipam-serve.service']) {
    const text = readFileSync(join(DEPLOY, 'systemd', unit), 'utf8');
    for (const m of text.matchAll(/^Exec\w+=\/usr\/bin\/env podipam (.*)$/gm)) {
      const argv = m[1]!.split(' ');
      check(unit, argv);
    }
  }
});

test('the systemd units: RuntimeDirectory under /run/podipam, hardened, the same socket as the DaemonSet', () => {
  const agent = readFileSync(join(DEPLOY, 'systemd', 'podipam-agent.service'), 'utf8');
  const serve = readFileSync(join(DEPLOY, 'systemd', 'podipam-serve.service'), 'utf8');
  assert.match(agent, /^RuntimeDirectory=podipam$/m);
  assert.match(serve, /^RuntimeDirectory=podipam\/serve$/m);
  for (const u of [agent, serve])
    for (const opt of ['NoNewPrivileges=yes', 'ProtectSystem=strict', 'ProtectHome=yes', 'PrivateTmp=yes']) assert.ok(u.includes(`\n${opt}\n`), opt);
  assert.match(serve, /^DynamicUser=yes$/m);
  assert.match(agent, /--socket \/run\/podipam\/agent\.sock/);
  assert.ok(existsSync('/usr/bin/systemd-analyze'), 'systemd-analyze is needed to verify the units');
  const r = spawnSync('systemd-analyze', ['verify', join(DEPLOY, 'systemd', 'podipam-agent.service'), join(DEPLOY, 'systemd', 'podipam-serve.service')], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.equal(r.stderr.trim(), '', 'systemd-analyze verify has no complaint');
});

test('the Dockerfile copies only what the build makes and what npm run image ships: every COPY source exists after npm run build, every addon, user 65532 with a home', () => {
  const text = readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8');
  const copies = [...text.matchAll(/^COPY (--from=build )?(.+) \S+$/gm)];
  assert.ok(copies.length >= 8, `${copies.length} COPY lines`);
  for (const m of copies) {
    for (const src of m[2]!.split(' ')) {
      if (src === '.') continue;
      const rel = m[1] ? src.replace(/^\/opt\/podipam\//, '') : src;
      const found = rel.endsWith('/*.node')
        ? readdirSync(join(REPO_ROOT, rel.slice(0, -'/*.node'.length))).some((f) => f.endsWith('.node'))
        : existsSync(join(REPO_ROOT, rel));
      assert.ok(found, `Dockerfile copies ${src}: ${rel} does not exist in a built tree`);
    }
  }
  // The shim compiles in the path of bin/podipam: both stages must use the same directory.
  assert.deepEqual(
    [...text.matchAll(/^WORKDIR (\S+)$/gm)].map((m) => m[1]),
    ['/opt/podipam', '/opt/podipam'],
  );
  assert.match(text, /^USER 65532:65532$/m);
  // As npm run image (scripts/image/stage-app.mjs): every addon the program loads
  // (src/util/native-addon.ts), and the user with a passwd entry.
  const addons = readdirSync(join(REPO_ROOT, 'build/Release')).filter((f) => f.endsWith('.node'));
  assert.ok(addons.length >= 5, addons.join(', '));
  assert.ok(
    text.includes('build/Release/*.node ') || addons.every((a) => text.includes(`build/Release/${a}`)),
    `the Dockerfile copies every addon: ${addons.join(', ')}`,
  );
  assert.match(text, /nonroot:x:65532:65532:nonroot:\/home\/nonroot:\/usr\/sbin\/nologin/);
  assert.match(text, /^FROM node:20-bookworm-slim$/m, 'Node.js 20 on bookworm, as npm run image');
});

/** The etcd container's "--flag=value" arguments. */
function etcdFlags(all: readonly K8sObject[]): Map<string, string> {
  const sts = all.find((o) => o.kind === 'StatefulSet' && o.metadata.name === 'podipam-etcd');
  assert.ok(sts, 'no StatefulSet podipam-etcd');
  const c = containersOf(sts).find((x) => x.name === 'etcd');
  assert.ok(c?.command, 'no etcd container');
  return flags(c.command);
}

test('the datastore: three etcd members, one per node, on volumes, TLS for clients and peers, a PDB, probes on its health', () => {
  const sts = find('StatefulSet', 'podipam-etcd') as any;
  assert.equal(sts.spec.replicas, 3);
  const spec = podSpecOf(sts)!;
  assert.equal(spec.hostNetwork, true, 'the datastore runs before any pod network');
  const anti = spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution;
  assert.deepEqual(anti, [{ topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: sts.spec.selector.matchLabels } }]);
  assert.deepEqual(
    sts.spec.volumeClaimTemplates.map((v: any) => [v.metadata.name, v.spec.accessModes]),
    [['data', ['ReadWriteOnce']]],
  );
  const etcd = container(sts, 'etcd') as any;
  const f = etcdFlags(objects);
  assert.ok(
    (etcd.volumeMounts as any[]).some((m) => m.name === 'data' && m.mountPath === f.get('--data-dir')),
    'the data dir is the volume',
  );
  // TLS both ways, client certificates required on both.
  for (const flag of ['--client-cert-auth', '--peer-client-cert-auth']) assert.ok(f.has(flag), flag);
  for (const flag of ['--cert-file', '--key-file', '--trusted-ca-file', '--peer-cert-file', '--peer-key-file', '--peer-trusted-ca-file'])
    assert.match(f.get(flag) ?? '', /^\/etc\/etcd\/tls\//, flag);
  for (const flag of ['--listen-client-urls', '--advertise-client-urls', '--listen-peer-urls', '--initial-advertise-peer-urls'])
    assert.match(f.get(flag) ?? '', /^https:\/\//, flag);
  const tlsVolume = (spec.volumes as any[]).find((v) => v.name === 'tls');
  assert.equal(tlsVolume.secret.secretName, 'podipam-etcd-tls');
  assert.ok((etcd.volumeMounts as any[]).some((m) => m.name === 'tls' && m.mountPath === '/etc/etcd/tls'));
  // Every member in the initial cluster, by its stable name under the headless Service.
  const peerSvc = find('Service', 'podipam-etcd-peer') as any;
  assert.equal(peerSvc.spec.clusterIP, 'None');
  assert.equal(peerSvc.spec.publishNotReadyAddresses, true, 'members find each other before they are ready');
  assert.equal(sts.spec.serviceName, 'podipam-etcd-peer');
  const peerPort = Number(/:(\d+)$/.exec(f.get('--listen-peer-urls')!)![1]);
  assert.equal(
    f.get('--initial-cluster'),
    [0, 1, 2].map((i) => `podipam-etcd-${i}=https://podipam-etcd-${i}.podipam-etcd-peer.podipam-system.svc:${peerPort}`).join(','),
  );
  assert.equal(f.get('--initial-advertise-peer-urls'), `https://$(POD_NAME).podipam-etcd-peer.podipam-system.svc:${peerPort}`);
  assert.deepEqual(etcd.env, [{ name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }]);
  // Not the ports a kubeadm control plane's own etcd holds on the same hosts.
  const clientPort = Number(/:(\d+)$/.exec(f.get('--listen-client-urls')!)![1]);
  for (const p of [clientPort, peerPort]) assert.ok(![2379, 2380, 2381].includes(p), `port ${p}`);
  assert.equal((find('Service', 'podipam-etcd') as any).spec.ports[0].targetPort, clientPort);
  // Probes on etcd's own health endpoint (the plain-HTTP metrics listener, loopback only).
  const metrics = new URL(f.get('--listen-metrics-urls')!);
  assert.equal(metrics.hostname, '127.0.0.1');
  for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe']) {
    const g = etcd[probe].httpGet;
    assert.deepEqual([g.host, g.port, g.path.split('?')[0]], ['127.0.0.1', Number(metrics.port), '/health'], probe);
  }
  assert.match(etcd.livenessProbe.httpGet.path, /serializable=true/, 'liveness does not depend on the other members');
  assert.ok(etcd.resources.requests.cpu && etcd.resources.requests.memory);
  const pdb = find('PodDisruptionBudget', 'podipam-etcd') as any;
  assert.equal(pdb.spec.maxUnavailable, 1);
  assert.deepEqual(pdb.spec.selector, sts.spec.selector);
});

test('every podipam process reaches the datastore over etcds:// with the client certificate mounted where PODIPAM_ETCD_* say', () => {
  const cm = find('ConfigMap', 'podipam-config') as any;
  assert.match(cm.data.PODIPAM_DATASTORE, /^etcds:\/\//);
  const files = [cm.data.PODIPAM_ETCD_CA, cm.data.PODIPAM_ETCD_CERT, cm.data.PODIPAM_ETCD_KEY] as string[];
  assert.deepEqual(files, ['/etc/podipam/etcd/ca.crt', '/etc/podipam/etcd/tls.crt', '/etc/podipam/etcd/tls.key']);
  // Every container that opens the datastore (all podipam ones but the token maker and install-cni, which only writes the URL into the CNI config).
  const users: string[] = [];
  for (const o of objects) {
    const volumes = (podSpecOf(o)?.volumes as any[] | undefined) ?? [];
    for (const c of containersOf(o)) {
      if (!c.image.startsWith('podipam/') || c.name === 'tokens' || c.name === 'install-cni') continue;
      users.push(`${o.metadata.name}/${c.name}`);
      assert.ok(
        ((c.envFrom as any[]) ?? []).some((e) => e.configMapRef?.name === 'podipam-config'),
        `${c.name} gets PODIPAM_DATASTORE`,
      );
      const m = ((c.volumeMounts as any[]) ?? []).find((x) => x.mountPath === '/etc/podipam/etcd');
      assert.ok(m, `${o.metadata.name}/${c.name} mounts the client certificate`);
      assert.equal(volumes.find((v) => v.name === m.name)?.secret?.secretName, 'podipam-etcd-client-tls');
    }
  }
  assert.deepEqual(users.sort(), ['podipam-agent/agent', 'podipam-serve/controller', 'podipam-serve/pools', 'podipam-serve/serve']);
  // serve runs as 65532: the Secret's files are readable by its group.
  assert.equal(podSpecOf(find('Deployment', 'podipam-serve'))!.securityContext.fsGroup, 65532);
});

test('overlays/dev: the same install with one etcd member and no PDB', () => {
  const sts = dev.find((o) => o.kind === 'StatefulSet' && o.metadata.name === 'podipam-etcd') as any;
  assert.equal(sts.spec.replicas, 1);
  assert.equal(etcdFlags(dev).get('--initial-cluster'), 'podipam-etcd-0=https://podipam-etcd-0.podipam-etcd-peer.podipam-system.svc:2480');
  assert.ok(etcdFlags(dev).has('--client-cert-auth'));
  assert.equal(dev.filter((o) => o.kind === 'PodDisruptionBudget').length, 0);
  const names = (list: readonly K8sObject[]) => list.map((o) => `${o.kind}/${o.metadata.name}`).sort();
  assert.deepEqual(
    names(dev),
    names(objects).filter((n) => n !== 'PodDisruptionBudget/podipam-etcd'),
  );
});

// kubeadm's default --service-cidr (and that of most installers): pod addresses there collide with ClusterIPs.
const DEFAULT_SERVICE_CIDRS = ['10.96.0.0/12', 'fd00:10:96::/112'];

test("the ConfigMap's pools stay clear of the default Service CIDR and of CLUSTER_CIDR", () => {
  const data = (find('ConfigMap', 'podipam-config') as K8sObject & { data: Record<string, string> }).data;
  const pools = data
    .pools!.split('\n')
    .map((l) => l.trim().split(/\s+/))
    .filter((f) => f[0] !== '' && f[0] !== undefined);
  assert.ok(pools.length > 0, 'no pool in the ConfigMap');
  for (const [name, cidr] of pools) {
    for (const other of [...DEFAULT_SERVICE_CIDRS, data.CLUSTER_CIDR!]) {
      const [a, b] = [parsePrefix(cidr!), parsePrefix(other)];
      assert.ok(a.family !== b.family || !prefixOverlaps(a, b), `pool ${name} ${cidr} overlaps ${other}`);
    }
  }
});
