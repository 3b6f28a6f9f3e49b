import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { REPO_ROOT } from '../plugin.js';
import { renderKustomization, type K8sObject } from '../kustomize.js';
import { NamespaceMode } from '../cri-client.js';
import { planPod, type NodeView, type Pod, SERVICE_ACCOUNT_DIR } from './plan-pod.js';
import { podOfWorkload } from './pod-of-workload.js';
import { UnsupportedFieldError } from './unsupported-field-error.js';

const objects = renderKustomization(join(REPO_ROOT, 'deploy', 'overlays', 'dev')).objects;
const config = (objects.find((o) => o.kind === 'ConfigMap') as K8sObject & { data: Record<string, string> }).data;
const node: NodeView = {
  nodeName: 'node-a',
  hostIP: '10.9.0.2',
  podIP: '',
  configMaps: { 'podipam-config': config },
  secrets: { 'podipam-etcd-client-tls': { 'ca.crt': 'CA', 'tls.crt': 'C', 'tls.key': 'K' }, 'podipam-etcd-tls': { 'ca.crt': 'CA' } },
  services: [
    { name: 'podipam', clusterIP: '10.96.0.20', ports: [{ name: 'http', port: 7420 }] },
    { name: 'podipam-etcd-peer', clusterIP: 'None', ports: [{ name: 'client', port: 2479 }] },
  ],
  kubernetes: { host: '10.9.0.1', port: 6443 },
  clusterDns: { server: '10.9.0.1', domain: 'cluster.local' },
  serviceAccount: { token: 'TOKEN', caCrt: 'KUBE-CA' },
  volumeRoot: '/v',
  logDirectory: '/logs',
};
const workload = (kind: string) => objects.find((o) => o.kind === kind)!;
const envOf = (c: { envs: { key: string; value: string }[] }) => Object.fromEntries(c.envs.map((e) => [e.key, e.value]));

test('planPod: the agent DaemonSet pod becomes a NODE-network sandbox, install-cni first, $(VAR)s expanded from fieldRef and the ConfigMap', () => {
  const pod = podOfWorkload(workload('DaemonSet'), 'node-a');
  assert.match(pod.metadata.name, /^podipam-agent-[a-z0-9]{5}$/);
  const plan = planPod(pod, node);
  assert.equal(plan.sandbox.linux.securityContext?.namespaceOptions?.network, NamespaceMode.NODE);
  assert.equal(plan.sandbox.hostname, '');
  assert.deepEqual(plan.sandbox.dnsConfig, {
    servers: ['10.9.0.1'],
    searches: ['podipam-system.svc.cluster.local', 'svc.cluster.local', 'cluster.local'],
    options: ['ndots:5'],
  });
  assert.equal(plan.sandbox.labels['app.kubernetes.io/name'], 'podipam-agent');
  assert.equal(plan.sandbox.labels['io.kubernetes.pod.namespace'], 'podipam-system');
  assert.deepEqual(
    plan.initContainers.map((c) => c.name),
    ['install-cni'],
  );
  const install = plan.initContainers[0]!.config;
  assert.ok(install.command.includes('--node-name=node-a'), install.command.join(' '));
  assert.ok(install.command.includes(`--datastore=${config.PODIPAM_DATASTORE}`), install.command.join(' '));
  assert.equal(install.linux.securityContext.runAsUser?.value, 0);
  assert.equal(install.linux.securityContext.readonlyRootfs, true);
  assert.equal(install.linux.securityContext.noNewPrivs, true);
  assert.deepEqual(install.linux.securityContext.capabilities, { addCapabilities: [], dropCapabilities: ['ALL'] });
  const agent = plan.containers[0]!;
  assert.deepEqual(agent.config.linux.securityContext.capabilities.addCapabilities, ['NET_ADMIN', 'NET_RAW', 'SYS_NICE']);
  const env = envOf(agent.config);
  assert.equal(env.NODE_NAME, 'node-a');
  assert.equal(env.PODIPAM_DATASTORE, config.PODIPAM_DATASTORE);
  assert.equal(env.KUBERNETES_SERVICE_HOST, '10.9.0.1');
  assert.equal(env.KUBERNETES_SERVICE_PORT, '6443');
  assert.equal(env.PODIPAM_SERVICE_HOST, '10.96.0.20', 'service links, as kubelet sets them');
  assert.equal(env.PODIPAM_PORT, 'tcp://10.96.0.20:7420');
  assert.equal(env.PODIPAM_ETCD_PEER_SERVICE_HOST, undefined, 'a headless Service has no variables');
  // hostPath volumes are node paths; the token is mounted read-only where client-node looks.
  const cniBin = agent.config.mounts.find((m) => m.containerPath === '/opt/cni/bin')!;
  assert.deepEqual(cniBin, { containerPath: '/opt/cni/bin', hostPath: '/opt/cni/bin', readonly: true });
  assert.deepEqual(
    agent.config.mounts.find((m) => m.containerPath === SERVICE_ACCOUNT_DIR),
    { containerPath: SERVICE_ACCOUNT_DIR, hostPath: '/v/kube-api-access', readonly: true },
  );
  assert.deepEqual(
    plan.volumes.find((v) => v.name === 'xtables-lock'),
    { name: 'xtables-lock', kind: 'hostPath', path: '/run/xtables.lock', type: 'FileOrCreate' },
  );
  assert.deepEqual(agent.readiness?.action, { kind: 'exec', command: ['podipam', 'agent', 'status'] });
});

test('planPod: serve runs as 65532 with fsGroup on its volumes, secret modes kept, nested mount points made, the optional token Secret left out', () => {
  const plan = planPod(podOfWorkload(workload('Deployment'), 'node-a'), node);
  assert.deepEqual(
    plan.initContainers.map((c) => c.name),
    ['tokens', 'pools'],
  );
  assert.deepEqual(
    plan.containers.map((c) => c.name),
    ['serve', 'controller'],
  );
  const serve = plan.containers[0]!;
  assert.equal(serve.config.linux.securityContext.runAsUser?.value, 65532);
  assert.equal(serve.config.linux.securityContext.runAsGroup?.value, 65532);
  assert.deepEqual(serve.config.linux.securityContext.supplementalGroups, [65532]);
  assert.equal(serve.config.linux.securityContext.seccomp?.profileType, 0, 'RuntimeDefault');
  assert.equal(envOf(serve.config).PODIPAM_READ_TOKEN, undefined);
  assert.deepEqual(serve.readiness?.action, { kind: 'http', scheme: 'http', host: '10.9.0.2', port: 7420, path: '/healthz' });
  const tls = plan.volumes.find((v) => v.name === 'etcd-client-tls');
  assert.ok(tls?.kind === 'files');
  assert.deepEqual(
    tls.files.map((f) => [f.path, f.mode]),
    [
      ['ca.crt', 0o440],
      ['tls.crt', 0o440],
      ['tls.key', 0o440],
    ],
  );
  assert.equal(tls.gid, 65532);
  const cfg = plan.volumes.find((v) => v.name === 'config');
  assert.ok(cfg?.kind === 'files');
  assert.deepEqual(cfg.nested, ['etcd'], '/etc/podipam/etcd is mounted inside the configMap volume');
  assert.deepEqual(
    plan.volumes.find((v) => v.name === 'run'),
    { name: 'run', kind: 'dir', dir: '/v/run', memory: true, gid: 65532 },
  );
  const ctl = plan.containers[1]!.config;
  assert.ok(ctl.command.includes(`--cluster-cidr=${config.CLUSTER_CIDR}`), ctl.command.join(' '));
});

test('planPod: the etcd StatefulSet pod gets its ordinal name, POD_NAME in its flags, its claim as a volume, and no token', () => {
  const pod = podOfWorkload(workload('StatefulSet'), 'node-a', 0);
  assert.equal(pod.metadata.name, 'podipam-etcd-0');
  const plan = planPod(pod, node);
  const etcd = plan.containers[0]!.config;
  assert.ok(etcd.command.includes('--name=podipam-etcd-0'));
  assert.ok(etcd.command.includes('--advertise-client-urls=https://podipam-etcd-0.podipam-etcd-peer.podipam-system.svc:2479'));
  assert.deepEqual(
    etcd.mounts.find((m) => m.containerPath === '/var/lib/etcd'),
    { containerPath: '/var/lib/etcd', hostPath: '/v/data', readonly: false },
  );
  assert.equal(
    etcd.mounts.some((m) => m.containerPath === SERVICE_ACCOUNT_DIR),
    false,
    'automountServiceAccountToken: false',
  );
  assert.equal(plan.containers[0]!.startup?.action.kind, 'http');
});

const tiny = (spec: Record<string, unknown>): Pod => ({
  metadata: { name: 'p', namespace: 'ns', uid: 'u' },
  spec: { containers: [{ name: 'c', image: 'i' }], ...spec },
});
const refuses = (spec: Record<string, unknown>, path: string) =>
  assert.throws(
    () => planPod(tiny(spec), node),
    (e: unknown) => e instanceof UnsupportedFieldError && e.path === path,
    `expected ${path}`,
  );

test('planPod refuses what it cannot honour, naming the field', () => {
  refuses(
    {
      containers: [
        { name: 'c', image: 'i' },
        { name: 'd', image: 'i', lifecycle: {} },
      ],
    },
    'spec.containers[1].lifecycle',
  );
  refuses({ hostPID: true }, 'spec.hostPID');
  refuses({ volumes: [{ name: 'x', nfs: {} }] }, 'spec.volumes[0].nfs');
  refuses({ volumes: [{ name: 'x', secret: { secretName: 'absent' } }] }, 'spec.volumes[0].secret.secretName');
  refuses({ containers: [{ name: 'c', image: 'i', imagePullPolicy: 'Always' }] }, 'spec.containers[0].imagePullPolicy');
  refuses(
    { containers: [{ name: 'c', image: 'i', securityContext: { runAsNonRoot: true, runAsUser: 0 } }] },
    'spec.containers[0].securityContext.runAsNonRoot',
  );
  refuses(
    { containers: [{ name: 'c', image: 'i', env: [{ name: 'X', valueFrom: { fieldRef: { fieldPath: 'spec.schedulerName' } } }] }] },
    'spec.containers[0].env[0].valueFrom.fieldRef.fieldPath',
  );
  refuses(
    { containers: [{ name: 'c', image: 'i', env: [{ name: 'X', valueFrom: { resourceFieldRef: {} } }] }] },
    'spec.containers[0].env[0].valueFrom.resourceFieldRef',
  );
  refuses({ containers: [{ name: 'c', image: 'i', volumeMounts: [{ name: 'nope', mountPath: '/x' }] }] }, 'spec.containers[0].volumeMounts[0].name');
  refuses({ dnsPolicy: 'None' }, 'spec.dnsPolicy');
});

test('planPod: env order and expansion follow kubelet (envFrom, then env in order; $$ escapes; unknown stays)', () => {
  const plan = planPod(
    tiny({
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      containers: [
        {
          name: 'c',
          image: 'i',
          command: ['x', '$(A)-$(B)', '$$(A)', '$(NOPE)'],
          envFrom: [{ configMapRef: { name: 'podipam-config' }, prefix: 'CM_' }],
          env: [
            { name: 'A', value: 'a' },
            { name: 'B', value: '$(A)$(CM_NODE_MASK_SIZE)' },
            { name: 'N', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
          ],
        },
      ],
    }),
    node,
  );
  const c = plan.containers[0]!.config;
  assert.deepEqual(c.command, ['x', `a-a${config.NODE_MASK_SIZE}`, '$(A)', '$(NOPE)']);
  const env = envOf(c);
  assert.equal(env.N, 'ns');
  assert.equal(env.PODIPAM_SERVICE_HOST, undefined, 'enableServiceLinks: false');
  assert.equal(env.KUBERNETES_SERVICE_HOST, '10.9.0.1', 'the API server variables are always set');
  assert.equal(c.mounts.length, 0);
  assert.equal(plan.sandbox.linux.securityContext?.namespaceOptions?.network, NamespaceMode.POD);
  assert.equal(plan.sandbox.hostname, 'p');
});
