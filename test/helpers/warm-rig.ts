/**
 * A WarmService (as the agent's CNI back end, WarmBackend) in-process on a real SQLite datastore file and a real resource DB under
 * `root`, with a clock the test moves by hand (`clock.t`), for the warm-pool back end's tests.
 * `prev`: restart on the previous rig's datastore, data dir and clock (its pools are kept).
 */
import { join } from 'node:path';
import type { NetConf } from '../../src/cni/types.js';
import { ClusterIpam } from '../../src/cluster/service/cluster-ipam.js';
import { openStore } from '../../src/store/index.js';
import { ClusterServices, type ClusterServicesOptions } from '../../src/agent/cluster-services.js';
import { WarmService, type WarmOptions } from '../../src/warm/warm-service.js';
import { WarmBackend } from '../../src/plugin/warm-backend.js';
import { KubePods } from '../../src/agent/kube-pods.js';

/** The warm pool as the agent's CNI back end (WarmBackend), with the service's own controls at hand. */
export type RigWarm = WarmBackend & Pick<WarmService, 'report' | 'maintain' | 'flushWrites' | 'gcPods' | 'close'>;

export interface WarmRig {
  readonly url: string;
  readonly dataDir: string;
  readonly cluster: ClusterServices;
  readonly clock: { t: number };
  readonly warm: RigWarm;
  readonly admin: ClusterIpam;
}

export interface WarmRigSetup {
  /** Directory for the datastores (`ds<n>.db`) and data dirs (`agent<n>`). */
  readonly root: string;
  /** Distinct per rig in `root`. */
  readonly n: number;
  /** The datastore (default: the SQLite file `ds<n>.db` in `root`); a second rig on it names no pools. */
  readonly url?: string | undefined;
  /** Created on a fresh datastore. */
  readonly pools: readonly { name: string; cidr: string }[];
  /** The service's options (datastore, dataDir and now come from the rig). */
  readonly options: Omit<WarmOptions, 'datastore' | 'dataDir' | 'now'>;
}

/** `services`: how the rig's ClusterServices open the datastore (a test wraps the real store). */
export async function startWarmRig(s: WarmRigSetup, opts: Partial<WarmOptions> = {}, prev?: WarmRig, services: ClusterServicesOptions = {}): Promise<WarmRig> {
  const url = prev?.url ?? s.url ?? `sqlite:${join(s.root, `ds${s.n}.db`)}`;
  const admin = new ClusterIpam(await openStore(url));
  if (!prev) for (const p of s.pools) await admin.createPool(p);
  const clock = prev?.clock ?? { t: 1_000_000 };
  const cluster = new ClusterServices(services);
  const dataDir = prev?.dataDir ?? join(s.root, `agent${s.n}`);
  const service = new WarmService(
    { datastore: url, dataDir, openPodSource: (k, t) => KubePods.open(k, t), ...s.options, now: () => clock.t, ...opts },
    cluster,
  );
  await service.start();
  const pods = opts.pods ?? s.options.pods;
  const warm: RigWarm = Object.assign(new WarmBackend(service, pods), {
    report: () => service.report(),
    maintain: () => service.maintain(),
    flushWrites: () => service.flushWrites(),
    gcPods: () => service.gcPods(),
    close: () => service.close(),
  });
  return { url, dataDir, cluster, clock, warm, admin };
}

export async function stopWarmRig(r: WarmRig): Promise<void> {
  await r.warm.close();
  await r.cluster.close();
  await r.admin.store.close();
}

/** The network configuration a pod's ADD names: the podipam IPAM through the agent socket. */
export const warmConf: NetConf = (() => {
  const raw = { cniVersion: '1.0.0', name: 'wnet', ipam: { type: 'podipam', agent: '/run/podipam/agent.sock' } };
  return { cniVersion: '1.0.0', name: 'wnet', ipam: raw.ipam, raw };
})();
