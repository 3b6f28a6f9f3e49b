/**
 * A test kubelet: runs the pods of rendered manifests (`kubectl kustomize deploy/`) on a test
 * containerd through CRI as kubelet does. `start(workload)` makes the pod its controller would
 * (./kubelet/pod-of-workload.ts), plans the CRI requests (./kubelet/plan-pod.ts, pure: what it
 * cannot honour throws naming the field), checks every image is already in containerd's k8s.io
 * namespace (imagePullPolicy IfNotPresent: it never pulls), lays out the volumes — hostPath
 * through the node path → test directory map (the runtime sees the node paths, see
 * ./containerd.ts; the `type` is checked or created on the test directory), emptyDir (tmpfs for
 * `medium: Memory`), configMap and secret files with their modes and `fsGroup` as their group,
 * the service-account token, CA and namespace — then RunPodSandbox, each init container in
 * order (each must exit 0 before the next is created), then the containers, and waits until
 * each runs and passes its startup and readiness probes (HTTP and TCP probes are made from the
 * node's network namespace, exec probes by ExecSync; polled every second at most, not
 * `periodSeconds`); a liveness probe is then run once and must pass (not again: a test lasts
 * minutes). `resources` are not enforced. The API server a pod is told about
 * (KUBERNETES_SERVICE_HOST/_PORT) is the suite's double, addressed directly (no kube-proxy).
 * `stop()` stops the containers with the pod's grace period, then the sandbox, and removes them.
 */
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Containerd } from './containerd.js';
import { ContainerState, criErrorText } from './cri-client.js';
import { hasImage, normalizeRef } from './files-image.js';
import type { K8sObject } from './kustomize.js';
import { planPod, type ContainerPlan, type PodPlan, type Pod, type Probe, type VolumePlan } from './kubelet/plan-pod.js';
import { podOfWorkload } from './kubelet/pod-of-workload.js';
import type { ServiceView } from './kubelet/pod-env.js';
import { UnsupportedFieldError } from './kubelet/unsupported-field-error.js';

export interface TestKubeletOptions {
  readonly containerd: Containerd;
  readonly nodeName: string;
  /** The node's address (status.hostIP; host-network probes go there). */
  readonly hostIP: string;
  /** Node path → test path: the same map the containerd node was started with. */
  readonly hostPaths: Readonly<Record<string, string>>;
  /** The rendered manifests (ConfigMaps, Services and workloads are read from them). */
  readonly objects: readonly K8sObject[];
  /** Secrets the operator created (name → key → value), in the workloads' namespace. */
  readonly secrets: Readonly<Record<string, Readonly<Record<string, string>>>>;
  readonly kubernetes: { readonly host: string; readonly port: number; readonly token: string; readonly caCrt: string };
  readonly clusterDns: { readonly server: string; readonly domain: string };
  /** Where pods' volumes are laid out. */
  readonly workDir: string;
  /** Told each step (container created, exited, probe passed). */
  readonly trace?: (what: string) => void;
}

export interface RunningPod {
  readonly pod: Pod;
  readonly plan: PodPlan;
  readonly sandboxId: string;
  /** Container name → id (init containers included). */
  readonly containerIds: ReadonlyMap<string, string>;
  exec(container: string, cmd: readonly string[], timeoutSeconds?: number): Promise<{ stdout: string; stderr: string; exitCode: number }>;
  /** The container's stdout and stderr as the runtime logged them. */
  logs(container: string): string;
  stop(): Promise<void>;
}

export interface TestKubelet {
  /** Starts the pod of the workload `kind`/`name` (a StatefulSet's `ordinal`, 0 by default) and waits until it is ready. */
  start(kind: string, name: string, opts?: { ordinal?: number; readyTimeoutMs?: number }): Promise<RunningPod>;
}

const data = (o: K8sObject): Record<string, string> => ({ ...(o as { data?: Record<string, string> }).data });

export function testKubelet(o: TestKubeletOptions): TestKubelet {
  const rt = o.containerd;
  let serviceIp = 10;
  const clusterIPs = new Map<string, string>();
  const services = (ns: string): ServiceView[] =>
    o.objects
      .filter((x) => x.kind === 'Service' && (x.metadata.namespace ?? 'default') === ns)
      .map((x) => {
        const spec = x.spec as { clusterIP?: string; ports?: { name?: string; port: number; protocol?: string }[] };
        const key = `${ns}/${x.metadata.name}`;
        if (!clusterIPs.has(key)) clusterIPs.set(key, spec.clusterIP ?? `10.96.0.${serviceIp++}`);
        return { name: x.metadata.name, clusterIP: clusterIPs.get(key)!, ports: spec.ports ?? [] };
      });

  const logText = (plan: PodPlan, c: ContainerPlan): string => {
    const file = join(plan.sandbox.logDirectory, c.config.logPath);
    if (!existsSync(file)) return '';
    return readFileSync(file, 'utf8')
      .split('\n')
      .map((l) => l.replace(/^\S+ (stdout|stderr) [FP] /, ''))
      .join('\n');
  };

  const layOut = (v: VolumePlan, path: string): void => {
    if (v.kind === 'hostPath') {
      const test = o.hostPaths[v.path];
      if (test === undefined) throw new UnsupportedFieldError(`${path}.hostPath.path`, `${v.path} is not mapped to a test directory (map it in hostPaths)`);
      const st = existsSync(test) ? statSync(test) : undefined;
      const bad = (what: string) => new UnsupportedFieldError(`${path}.hostPath.type`, `${v.type}: ${v.path} (${test}) ${what}`);
      switch (v.type) {
        case '':
          break;
        case 'DirectoryOrCreate':
          if (st === undefined) mkdirSync(test, { recursive: true, mode: 0o755 });
          else if (!st.isDirectory()) throw bad('is not a directory');
          break;
        case 'Directory':
          if (!st?.isDirectory()) throw bad('is not a directory');
          break;
        case 'FileOrCreate':
          if (st === undefined) writeFileSync(test, '', { mode: 0o644 });
          else if (!st.isFile()) throw bad('is not a file');
          break;
        case 'File':
          if (!st?.isFile()) throw bad('is not a file');
          break;
        case 'Socket':
          if (!st?.isSocket()) throw bad('is not a socket');
          break;
        default:
          throw bad('this hostPath type is not honoured');
      }
      return;
    }
    mkdirSync(v.dir, { recursive: true });
    if (v.kind === 'dir') {
      if (v.memory) {
        const r = rt.onNode('mount', ['-t', 'tmpfs', '-o', 'mode=0777', `podipam-${v.name}`, v.dir]);
        if (r.status !== 0) throw new Error(`mounting tmpfs for emptyDir ${v.name}: ${r.stderr}`);
      }
      // emptyDir is world-writable; with fsGroup, group-owned and setgid (kubelet's SetVolumeOwnership).
      const mode = v.gid !== undefined ? '2777' : '777';
      const r = rt.onNode('sh', ['-ec', `chmod ${mode} "$1"; ${v.gid !== undefined ? `chgrp ${v.gid} "$1"` : ':'}`, 'sh', v.dir]);
      if (r.status !== 0) throw new Error(`emptyDir ${v.name}: ${r.stderr}`);
      return;
    }
    for (const f of v.files) {
      writeFileSync(join(v.dir, f.path), f.content);
      chmodSync(join(v.dir, f.path), f.mode);
      if (v.gid !== undefined) chownSync(join(v.dir, f.path), 0, v.gid);
    }
    for (const n of v.nested) mkdirSync(join(v.dir, n), { recursive: true });
    chmodSync(v.dir, 0o755);
  };

  const runProbe = async (p: Probe, containerId: string): Promise<string | undefined> => {
    const a = p.action;
    if (a.kind === 'exec') {
      try {
        const r = await rt.cri.execSync(containerId, a.command, p.timeoutSeconds);
        return r.exitCode === 0 ? undefined : `exit ${r.exitCode}: ${(r.stdout + r.stderr).trim().slice(-400)}`;
      } catch (e) {
        return criErrorText(e);
      }
    }
    const host = a.host.includes(':') ? `[${a.host}]` : a.host;
    const script =
      a.kind === 'http'
        ? `process.env.NODE_TLS_REJECT_UNAUTHORIZED='0';fetch(${JSON.stringify(`${a.scheme}://${host}:${a.port}${a.path}`)},{signal:AbortSignal.timeout(${p.timeoutSeconds * 1000})}).then(r=>{console.log(r.status);process.exit(r.status>=200&&r.status<400?0:1)},e=>{console.log(String(e.cause??e));process.exit(1)})`
        : `const s=require('net').connect(${a.port},${JSON.stringify(a.host)},()=>process.exit(0));s.on('error',e=>{console.log(e.message);process.exit(1)});setTimeout(()=>process.exit(1),${p.timeoutSeconds * 1000})`;
    const r = rt.onNode(process.execPath, ['-e', script]);
    return r.status === 0
      ? undefined
      : `${a.kind} probe ${a.kind === 'http' ? `${a.scheme}://${host}:${a.port}${a.path}` : `${host}:${a.port}`}: ${(r.stdout + r.stderr).trim()}`;
  };

  const waitFor = async (what: string, timeoutMs: number, step: () => Promise<string | undefined>): Promise<void> => {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const why = await step();
      if (why === undefined) return;
      if (Date.now() > until) throw new Error(`${what}: not within ${timeoutMs} ms: ${why}`);
      await sleep(500);
    }
  };

  return {
    async start(kind, name, opts = {}) {
      const w = o.objects.find((x) => x.kind === kind && x.metadata.name === name);
      if (w === undefined) throw new Error(`no ${kind} ${name} in the rendered manifests`);
      const pod = podOfWorkload(w, o.nodeName, opts.ordinal ?? 0);
      const ns = pod.metadata.namespace;
      const logDirectory = join(rt.logDir, `${ns}_${pod.metadata.name}_${pod.metadata.uid}`);
      const volumeRoot = join(o.workDir, pod.metadata.uid);
      const configMaps = Object.fromEntries(
        o.objects.filter((x) => x.kind === 'ConfigMap' && (x.metadata.namespace ?? 'default') === ns).map((x) => [x.metadata.name, data(x)]),
      );
      const plan = planPod(pod, {
        nodeName: o.nodeName,
        hostIP: o.hostIP,
        podIP: '',
        configMaps,
        secrets: o.secrets,
        services: services(ns),
        kubernetes: { host: o.kubernetes.host, port: o.kubernetes.port },
        clusterDns: o.clusterDns,
        serviceAccount: { token: o.kubernetes.token, caCrt: o.kubernetes.caCrt },
        volumeRoot,
        logDirectory,
      });
      for (const c of [...plan.initContainers, ...plan.containers]) {
        if (!hasImage(rt.socket, normalizeRef(c.config.image.image))) {
          throw new UnsupportedFieldError(
            `${c.path}.image`,
            `${c.config.image.image} is not in containerd's k8s.io namespace (IfNotPresent: the test kubelet never pulls; import it first)`,
          );
        }
      }
      mkdirSync(logDirectory, { recursive: true });
      plan.volumes.forEach((v, i) => layOut(v, `spec.volumes[${i}]`));
      const ids = new Map<string, string>();
      const sandboxId = await rt.cri.runPodSandboxConfig(plan.sandbox);
      const stop = async (): Promise<void> => {
        for (const id of [...ids.values()].reverse()) await rt.cri.stopContainer(id, plan.terminationGracePeriodSeconds).catch(() => {});
        await rt.cri.stopPodSandbox(sandboxId).catch(() => {});
        await rt.cri.removePodSandbox(sandboxId).catch(() => {});
        for (const v of plan.volumes) if (v.kind === 'dir' && v.memory) rt.onNode('umount', [v.dir]);
        rmSync(volumeRoot, { recursive: true, force: true });
      };
      const failWith = async (e: unknown): Promise<never> => {
        const logs = [...plan.initContainers, ...plan.containers].filter((c) => ids.has(c.name)).map((c) => `--- ${c.name}:\n${logText(plan, c).slice(-3000)}`);
        await stop();
        throw new Error(`pod ${pod.metadata.name}: ${e instanceof Error ? e.message : String(e)}\n${logs.join('\n')}`, { cause: e });
      };
      const timeout = opts.readyTimeoutMs ?? 120_000;
      try {
        for (const c of plan.initContainers) {
          const id = await rt.cri.createContainer(sandboxId, c.config, plan.sandbox);
          ids.set(c.name, id);
          await rt.cri.startContainer(id);
          o.trace?.(`${pod.metadata.name}: init container ${c.name} started`);
          await waitFor(`init container ${c.name} (${c.path})`, timeout, async () => {
            const s = await rt.cri.containerStatus(id);
            if (s.state !== ContainerState.EXITED) return 'still running';
            if (s.exitCode !== 0) throw new Error(`init container ${c.name} (${c.path}) exited ${s.exitCode} (${s.reason} ${s.message})`);
            return undefined;
          });
        }
        for (const c of plan.containers) {
          const id = await rt.cri.createContainer(sandboxId, c.config, plan.sandbox);
          ids.set(c.name, id);
          await rt.cri.startContainer(id);
          o.trace?.(`${pod.metadata.name}: container ${c.name} started`);
        }
        for (const c of plan.containers) {
          const id = ids.get(c.name)!;
          const alive = async (): Promise<void> => {
            const s = await rt.cri.containerStatus(id);
            if (s.state === ContainerState.EXITED) throw new Error(`container ${c.name} (${c.path}) exited ${s.exitCode} (${s.reason})`);
          };
          for (const [kindName, p] of [
            ['startup', c.startup],
            ['readiness', c.readiness],
          ] as const) {
            if (p === undefined) continue;
            await waitFor(`${kindName} probe of ${c.name} (${c.path})`, timeout, async () => {
              await alive();
              return runProbe(p, id);
            });
            o.trace?.(`${pod.metadata.name}: ${c.name} passed its ${kindName} probe`);
          }
          await alive();
          if (c.liveness !== undefined) {
            const why = await runProbe(c.liveness, id);
            if (why !== undefined) throw new Error(`liveness probe of ${c.name} (${c.path}.livenessProbe) failed once ready: ${why}`);
          }
        }
      } catch (e) {
        return failWith(e);
      }
      return {
        pod,
        plan,
        sandboxId,
        containerIds: ids,
        exec: (container, cmd, t = 30) => rt.cri.execSync(ids.get(container)!, cmd, t),
        logs: (container) => {
          const c = [...plan.initContainers, ...plan.containers].find((x) => x.name === container);
          return c ? logText(plan, c) : '';
        },
        stop,
      };
    },
  };
}
