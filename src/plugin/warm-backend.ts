/**
 * The warm pool (src/warm/warm-service.ts) as a CNI back end (`"ipam": {"type": "podipam",
 * "agent": SOCK}` inside an agent that runs one): decodes the config once per call (the ipam
 * keys it knows: type, agent, routes — code 7 for any other; the routes through the one
 * parser), hands the service typed values, maps its typed failures to CNI codes with the one
 * table (src/cni/cni-error-of.ts) and shapes the answer: the service's addresses, then the
 * config's routes. On ADD it hands the service the pod (CNI_ARGS) and its placement
 * (placement-of.ts: the runtime's pod annotations, else the host's pod cache's, and the
 * namespace's): a malformed annotation is code 7 before the pool is asked anything; an
 * annotated pod is allocated directly on the datastore by the service, never from its idle queue.
 */
import { cniErrorOf } from '../cni/cni-error-of.js';
import { CniCode, CniError } from '../cni/errors.js';
import { prevResultAddrs } from '../cni/prev-result.js';
import type { Attachment, IpamResult, NetConf } from '../cni/types.js';
import type { PodDirectory } from '../model/pod-directory.js';
import type { WarmRequest, WarmService } from '../warm/warm-service.js';
import { parseRoutes } from './config-decode.js';
import type { IpamBackend, IpamRequest } from './ipam-backend.js';
import { placementFor } from './placement-of.js';

const KNOWN = ['type', 'agent', 'routes'];

export class WarmBackend implements IpamBackend {
  /** `pods`: the host's watch-fed pod cache (BackendHost.pods), when it has one. */
  constructor(
    readonly service: WarmService,
    readonly pods?: PodDirectory,
  ) {}

  async add(req: IpamRequest): Promise<IpamResult> {
    const routes = warmRoutes(req.conf);
    let w: WarmRequest;
    try {
      w = { ...warmRequest(req), pod: req.pod, placement: await placementFor(req, this.pods) };
    } catch (e) {
      throw cniErrorOf(e, 'ADD');
    }
    const r = await this.service.add(w).catch(fail('ADD'));
    return { ips: r.ips, ...(routes ? { routes } : {}) };
  }

  async del(req: IpamRequest): Promise<void> {
    warmRoutes(req.conf);
    await this.service.del(warmRequest(req)).catch(fail('DEL'));
  }

  async check(req: IpamRequest): Promise<void> {
    warmRoutes(req.conf);
    const w = warmRequest(req);
    await this.service
      .check(
        w,
        prevResultAddrs(req.conf.prevResult).map((p) => p.addr),
      )
      .catch(fail('CHECK'));
  }

  async gc(conf: NetConf, valid: readonly Attachment[]): Promise<void> {
    warmRoutes(conf);
    await this.service.gc(conf.name, valid).catch(fail('GC'));
  }

  async status(): Promise<void> {
    await this.service.status().catch(fail('STATUS'));
  }
}

function warmRequest(req: IpamRequest): WarmRequest {
  return { network: req.conf.name, containerId: req.containerId, ifname: req.ifname, cniArgs: req.cniArgs };
}

function fail(verb: string): (e: unknown) => never {
  return (e) => {
    throw cniErrorOf(e, verb);
  };
}

/** The warm back end's ipam keys (type, agent, routes); returns the routes. Code 7 otherwise. */
function warmRoutes(conf: NetConf): IpamResult['routes'] {
  for (const k of Object.keys(conf.ipam)) {
    if (!KNOWN.includes(k.toLowerCase()))
      throw new CniError(
        CniCode.InvalidConfig,
        `ipam.${k} ${JSON.stringify(conf.ipam[k])}: unknown key for the agent's warm-pool back end (known: ${KNOWN.join(', ')})`,
      );
  }
  const routes = parseRoutes(conf.ipam);
  return routes.length > 0 ? routes : undefined;
}
