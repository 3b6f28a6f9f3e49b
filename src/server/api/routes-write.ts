/**
 * Mutating API routes (admin token): pools, nodes, allocations and release. Bodies are
 * validated here, once, naming field and value; the services then see typed values. Every
 * successful write invalidates the summary cache, so the caller's next read shows it.
 */
import { addNode } from '../../controller/add-node.js';
import { deleteNode } from '../../controller/delete-node.js';
import { cniHandleId, MAX_HANDLE_LENGTH } from '../../model/handle-id.js';
import { CNI_NAME } from '../../model/cni-name.js';
import { reservedHandle, reservedNetwork } from '../../model/reserved-network.js';
import { tryParseAddr, formatAddr, formatPrefix } from '../../ip/index.js';
import type { ApiDeps } from './api-deps.js';
import { reuseAfterText } from '../../cluster/index.js';
import { heldJson } from './held-json.js';
import { allocateAddresses, releaseAddress, releaseHandleAddresses } from './cluster-addresses.js';
import { badField } from '../http/http-error.js';
import type { Ctx, HandlerSpec } from '../http/http-server.js';
import type { Router } from '../http/router.js';
import {
  HANDLE,
  HANDLE_HINT,
  NAME,
  NAME_HINT,
  optionalBool,
  optionalInt,
  optionalString,
  optionalStringArray,
  optionalStringMap,
  requireString,
  type Body,
} from '../http/validate.js';
import { poolChangeScope, takesOutOfService } from '../../warm/warm-answers.js';
import type { Pool } from '../../cluster/records/index.js';
import { agentsApplied, warmTimeout } from './warm-wait.js';
import { fieldErrors } from './field-errors.js';

// What the plugin accepts (src/model): container ids and network names of any length (the
// handle they make is checked against MAX_HANDLE_LENGTH), node names as Kubernetes has them.
const CONTAINER_ID = CNI_NAME;
export const IFNAME = /^(?!\.{1,2}$)[^\s/:]{1,15}$/;
const NETWORK = CNI_NAME;
const NODE = NAME;
/** The network name in handles built from containerId when the body names none (the conflist `npm start` prints). */
export const DEFAULT_NETWORK = 'podipam';

export function addWriteRoutes(r: Router<HandlerSpec>, d: ApiDeps): void {
  // An operator's release through the API: stamped "release" in the history (not a runtime's DEL).
  // Made on first use: registration alone (the route tests) needs no service.
  let operatorIpam: ReturnType<ApiDeps['ipam']['withReason']> | undefined;
  const operator = (): ReturnType<ApiDeps['ipam']['withReason']> => (operatorIpam ??= d.ipam.withReason('release'));
  const write = (status: number, run: (c: Ctx, body: Body) => Promise<unknown>): HandlerSpec => ({
    status,
    run: async (c) => {
      const out = await run(c, await c.body());
      d.summary.invalidate();
      return out;
    },
  });

  r.add(
    'POST',
    '/api/v1/pools',
    write(201, async (_c, b) => {
      const input = {
        name: requireString(b, 'name', NAME, NAME_HINT),
        cidr: requireCidr(b, 'cidr'),
        blockSize: optionalInt(b, 'blockSize', 0, 128),
        nodeSelector: optionalString(b, 'nodeSelector'),
        disabled: optionalBool(b, 'disabled'),
        reuseAfter: optionalString(b, 'reuseAfter'),
      };
      await fieldErrors(() => d.ipam.createPool(input), {
        'pool name': 'name',
        blockSize: 'blockSize',
        nodeSelector: 'nodeSelector',
        cidr: 'cidr',
        'pool reuseAfter': 'reuseAfter',
      });
      return { name: input.name, created: true };
    }),
  );

  // The settings a serving pool may change (src/cluster/admin/pool-settings.ts); the CIDR changes by /resize.
  r.add(
    'PATCH',
    '/api/v1/pools/:name',
    write(200, async (c, b) => {
      const disabled = optionalBool(b, 'disabled');
      const blockSize = optionalInt(b, 'blockSize', 0, 128);
      const nodeSelector = optionalString(b, 'nodeSelector');
      const reuseAfter = optionalString(b, 'reuseAfter');
      if (disabled === undefined && blockSize === undefined && nodeSelector === undefined && reuseAfter === undefined) {
        throw badField(
          'disabled',
          'give at least one of "disabled", "blockSize", "nodeSelector", "reuseAfter" (the cidr changes with POST /api/v1/pools/NAME/resize)',
        );
      }
      const name = c.params.name as string;
      const warmTimeoutMs = warmTimeout(c);
      const settings = {
        ...(disabled !== undefined ? { disabled } : {}),
        ...(blockSize !== undefined ? { blockSize } : {}),
        ...(nodeSelector !== undefined ? { nodeSelector } : {}),
        ...(reuseAfter !== undefined ? { reuseAfter } : {}),
      };
      const p = await fieldErrors(() => d.ipam.setPoolSettings(name, settings), {
        'pool name': 'name',
        blockSize: 'blockSize',
        nodeSelector: 'nodeSelector',
        disabled: 'disabled',
        'pool reuseAfter': 'reuseAfter',
      });
      return {
        name,
        disabled: p.disabled,
        blockSize: p.blockSize,
        formerBlockSizes: p.formerBlockSizes,
        nodeSelector: p.nodeSelector.text,
        reuseAfter: reuseAfterText(p.reuseAfterMs),
        ...(takesOutOfService({ disabled, nodeSelector }) ? { agents: await poolAgents(d, p, warmTimeoutMs) } : {}),
      };
    }),
  );

  r.add(
    'POST',
    '/api/v1/pools/:name/resize',
    write(200, async (c, b) => {
      const cidr = requireString(b, 'cidr', /^\S+$/, 'a CIDR');
      const name = c.params.name as string;
      const r = await fieldErrors(() => d.ipam.resizePool(name, cidr), { 'pool name': 'name', cidr: 'cidr', blockSize: 'cidr' });
      return { name, cidr: formatPrefix(r.pool.cidr), resized: r.kind, removedBlocks: r.removedBlocks };
    }),
  );

  for (const [verb, draining] of [
    ['drain', true],
    ['undrain', false],
  ] as const) {
    r.add(
      'POST',
      `/api/v1/pools/:name/${verb}`,
      write(200, async (c) => {
        const name = c.params.name as string;
        const warmTimeoutMs = draining ? warmTimeout(c) : 0;
        const p = await d.ipam.setPoolDraining(name, draining);
        const agents = draining ? await poolAgents(d, p, warmTimeoutMs) : undefined;
        return { ...heldJson(await d.ipam.poolHeld(name)), name, ...(agents ? { agents } : {}) };
      }),
    );
  }

  r.add(
    'DELETE',
    '/api/v1/pools/:name',
    write(200, async (c) => {
      await d.ipam.deletePool(c.params.name as string);
      return { name: c.params.name, deleted: true };
    }),
  );

  r.add(
    'POST',
    '/api/v1/nodes',
    write(201, async (_c, b) => {
      const name = requireString(b, 'name', NAME, NAME_HINT);
      return addNode(d.store, { name, labels: optionalStringMap(b, 'labels') ?? {} });
    }),
  );

  // `?release=now`: also release the node's blocks (its pods' addresses included) at once, on
  // the proof the deletion just wrote, rather than by cluster GC after its grace period.
  r.add(
    'DELETE',
    '/api/v1/nodes/:name',
    write(200, async (c) => {
      const release = c.query.get('release');
      if (release !== null && release !== 'now')
        throw badField('release', `query parameter "release" must be "now" (or absent): got ${JSON.stringify(release)}`);
      const rec = await deleteNode(d.store, c.params.name as string, { by: 'api' });
      if (release === null) return { name: rec.name, deleted: true, releasedPodCIDRs: rec.podCIDRs };
      const blocks = (await d.ipam.releaseDeletedNode(rec.name)).filter((b) => b.released);
      d.checks.invalidate();
      return {
        name: rec.name,
        deleted: true,
        releasedPodCIDRs: rec.podCIDRs,
        releasedBlocks: blocks.map((b) => (b.cidr ? formatPrefix(b.cidr) : '')),
        releasedHandles: blocks.reduce((n, b) => n + b.handles, 0),
      };
    }),
  );

  r.add(
    'POST',
    '/api/v1/allocations',
    write(201, async (_c, b) => {
      const node = requireString(b, 'node', NODE, `a node name: ${NAME_HINT}`);
      const handleGiven = optionalString(b, 'handle', HANDLE, HANDLE_HINT);
      let network: string | undefined;
      let containerId: string | undefined;
      let ifname: string | undefined;
      let handle: string;
      if (handleGiven !== undefined) {
        for (const f of ['network', 'containerId', 'ifname'])
          if (b[f] !== undefined) throw badField(f, `give either "handle" or "containerId" (with "network", "ifname"), not both: got "${f}" with "handle"`);
        const reserved = reservedHandle('field "handle"', handleGiven);
        if (reserved !== undefined) throw badField('handle', reserved);
        handle = handleGiven;
      } else {
        containerId = optionalString(b, 'containerId', CONTAINER_ID, 'a CNI container id (letters, digits, "_", "." and "-")');
        if (containerId === undefined) throw badField('containerId', 'field "containerId" (or "handle") is required');
        network = optionalString(b, 'network', NETWORK, 'a CNI network name') ?? DEFAULT_NETWORK;
        const reserved = reservedNetwork('field "network"', network);
        if (reserved !== undefined) throw badField('network', reserved);
        ifname = optionalString(b, 'ifname', IFNAME, 'an interface name of at most 15 characters without "/", ":" or spaces') ?? 'eth0';
        handle = cniHandleId(network, containerId, ifname);
        if (handle.length > MAX_HANDLE_LENGTH) {
          throw badField('containerId', `"network", "containerId" and "ifname" make a handle of ${handle.length} characters: at most ${MAX_HANDLE_LENGTH}`);
        }
      }
      const pools = optionalStringArray(b, 'pools', NAME, NAME_HINT);
      const ips = optionalStringArray(b, 'ips')?.map((s, i) => {
        const a = tryParseAddr(s);
        if (!a) throw badField(`ips[${i}]`, `field "ips[${i}]" must be an IP address: got ${JSON.stringify(s)}`);
        return formatAddr(a);
      });
      try {
        const addresses = await allocateAddresses(d.ipam, { node, handle, network, containerId, ifname, pools, ips });
        d.metrics.allocations.inc({ op: 'allocate', result: 'ok' });
        return { handle, node, ips: addresses.map((a) => a.ip), addresses };
      } catch (e) {
        d.metrics.allocations.inc({ op: 'allocate', result: 'error' });
        throw e;
      }
    }),
  );

  r.add(
    'DELETE',
    '/api/v1/allocations/:handle',
    write(200, async (c) => {
      const handle = c.params.handle as string;
      if (!HANDLE.test(handle)) throw badField('handle', `handle must be ${HANDLE_HINT}: got ${JSON.stringify(handle)}`);
      const node = c.query.get('node') ?? undefined;
      if (node !== undefined && !NODE.test(node)) throw badField('node', `query parameter "node" must be a node name: got ${JSON.stringify(node)}`);
      const released = await releaseHandleAddresses(operator(), handle, node);
      d.metrics.allocations.inc({ op: 'release', result: 'ok' });
      return { handle, released };
    }),
  );

  r.add(
    'POST',
    '/api/v1/release',
    write(200, async (_c, b) => {
      // The dashboard releases what check reported and then asks again: that answer must be fresh.
      d.checks.invalidate();
      // {"handle"}: all it holds; {"ip"}: that address, whoever holds it; {"ip", "handle"}: that
      // address only while that handle holds it (what check reported may be stale by now).
      const ip = optionalString(b, 'ip');
      const handle = optionalString(b, 'handle', HANDLE, HANDLE_HINT);
      if (ip === undefined && handle === undefined) throw badField('ip', 'give "ip", "handle", or both (the address only while that handle holds it)');
      if (ip === undefined) return { handle, released: await releaseHandleAddresses(operator(), handle as string) };
      const a = tryParseAddr(ip);
      if (!a) throw badField('ip', `field "ip" must be an IP address: got ${JSON.stringify(ip)}`);
      const heldBy = await releaseAddress(operator(), formatAddr(a), handle);
      return { ip: formatAddr(a), released: heldBy === undefined ? [] : [formatAddr(a)], heldBy: heldBy ?? null };
    }),
  );
}

function requireCidr(b: Body, field: string): string {
  const s = requireString(b, field);
  if (!/^[0-9a-fA-F.:]+\/[0-9]{1,3}$/.test(s)) throw badField(field, `field "${field}" must be a CIDR such as 10.244.0.0/16: got ${JSON.stringify(s)}`);
  return s;
}

/** The node agents' answer to a change of pool `p` (warm-wait.ts) that takes addresses out of service. */
async function poolAgents(d: ApiDeps, p: Pool, timeoutMs: number): Promise<unknown> {
  return agentsApplied(d.store, await poolChangeScope(d.store, p), timeoutMs);
}
