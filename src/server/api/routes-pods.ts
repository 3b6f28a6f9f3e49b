/**
 * Pods, not only handles (read token): `GET /api/v1/pods/NS/NAME` — every handle whose record
 * names the pod, with its addresses, network and node (404 when none does);
 * `GET /api/v1/pods?name=NAME` — the same for pods of that name in any namespace;
 * `GET /api/v1/addresses/IP` — who holds an address: handle, pod, node, block (404 when free).
 */
import { parseAddr } from '../../ip/index.js';
import { DNS_SUBDOMAIN_HINT, DNS_SUBDOMAIN } from '../../model/node-name.js';
import type { ApiDeps } from './api-deps.js';
import { badField, notFound } from '../http/http-error.js';
import type { HandlerSpec } from '../http/http-server.js';
import type { Router } from '../http/router.js';

export function addPodRoutes(r: Router<HandlerSpec>, d: ApiDeps): void {
  r.add('GET', '/api/v1/pods/:namespace/:name', {
    run: async (c) => {
      const ns = podPart(c.params.namespace, 'namespace');
      const name = podPart(c.params.name, 'name');
      const items = await d.ipam.handlesOfPod(ns, name);
      if (items.length === 0) throw notFound(`pod ${ns}/${name} holds no address (no handle record names it)`);
      return { pod: `${ns}/${name}`, items };
    },
  });

  r.add('GET', '/api/v1/pods', {
    run: async (c) => {
      const name = podPart(c.query.get('name') ?? undefined, 'name');
      return { items: await d.ipam.handlesOfPod(undefined, name) };
    },
  });

  r.add('GET', '/api/v1/addresses/:ip', {
    run: async (c) => {
      let addr;
      try {
        addr = parseAddr(c.params.ip ?? '');
      } catch (e) {
        throw badField('ip', `ip must be an IPv4 or IPv6 address: ${(e as Error).message}`);
      }
      const holder = await d.ipam.holderOfAddress(addr);
      if (!holder) throw notFound(`address ${c.params.ip} is not allocated`);
      return holder;
    },
  });
}

function podPart(v: string | undefined, field: string): string {
  if (v === undefined || !DNS_SUBDOMAIN.test(v)) throw badField(field, `pod ${field} must be ${DNS_SUBDOMAIN_HINT}: got ${JSON.stringify(v)}`);
  return v;
}
