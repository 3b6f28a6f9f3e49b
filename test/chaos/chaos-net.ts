/**
 * The partition rig's network: one namespace per host (etcd members, nodes), each joined by a
 * veth pair to a Linux bridge in a hub namespace, all on one /24 of 10.251.X.0 (X picked free
 * on this machine). This process sits on the bridge too, through a veth of its own in the
 * root namespace (the observer: it finds the leader, reads the store at the end; its port is
 * never faulted). Every namespace and link is the test's own and is removed by `remove()`;
 * deleting a namespace deletes its veth ends.
 *
 * Faults on a host's link, all healed by `heal(id)`:
 *   linkDown   the host's end of the link down (carrier lost, packets both ways dropped)
 *   drop       silent loss on the bridge, as a broken switch or a partition would drop: an
 *              nftables rule in the hub's bridge forward chain drops 'out' (frames the host
 *              sends), 'in' (frames toward it) or 'both'; the host's own stack sees nothing
 *   slow       a token-bucket (tc tbf) rate limit on both ends of the link, so that
 *              traffic queues: delay grows with load, up to a second, then packets drop
 *
 * Fixed added latency (`tc netem delay`) is what a slow member would ideally get, but netem is
 * not built into every kernel (CONFIG_NET_SCH_NETEM; not in this project's CI machines, which
 * have no loadable modules); tbf is, and a saturated slow link is the same failure to raft.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';

export interface ChaosHost {
  /** Short id ("m0", "n1"): the bridge port's name in the hub. */
  readonly id: string;
  readonly netns: string;
  readonly ip: string;
}

export type DropDirection = 'in' | 'out' | 'both';

export interface ChaosNet {
  readonly hub: string;
  readonly hosts: ReadonlyMap<string, ChaosHost>;
  /** This process's address on the bridge. */
  readonly observerIp: string;
  host(id: string): ChaosHost;
  linkDown(id: string): void;
  drop(id: string, direction: DropDirection): void;
  slow(id: string, kbit: number): void;
  /** Removes every fault of the host's link (idempotent). */
  heal(id: string): void;
  /** Deletes every namespace and the observer's link; safe to call twice. */
  remove(): void;
}

/** Runs `ip`/`tc`/…, returning success and output; never throws (10 s at most). */
export function run(cmd: string, args: readonly string[]): { ok: boolean; out: string } {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 10_000 });
  return { ok: r.status === 0, out: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}` };
}

function must(cmd: string, args: readonly string[]): void {
  const r = run(cmd, args);
  assert.ok(r.ok, `${cmd} ${args.join(' ')}: ${r.out}`);
}

const NFT_TABLE = 'pdchaos';

/** One nftables command inside a namespace. */
function nft(netns: string, command: string): void {
  must('ip', ['netns', 'exec', netns, 'nft', command]);
}

/** A /24 under 10.251.0.0/16 that no route of this machine's root namespace covers yet. */
function freeSubnet(seed: number): number {
  for (let k = 0; k < 256; k++) {
    const x = (seed + k * 37) % 256;
    const routes = run('ip', ['-4', 'route', 'show']).out;
    if (!routes.includes(`10.251.${x}.`)) return x;
  }
  throw new Error('no free /24 under 10.251.0.0/16 for the partition rig');
}

/**
 * Builds the hub and one namespace per id (`ids[i]` gets 10.251.X.(i+1)); `tag` makes the
 * names unique to this run (at most 6 characters, so link names stay within 15).
 */
export function createChaosNet(tag: string, ids: readonly string[]): ChaosNet {
  assert.ok(/^[a-z0-9]{1,6}$/.test(tag), `tag ${JSON.stringify(tag)}: 1-6 lowercase letters or digits`);
  const hub = `pdch-${tag}-hub`;
  const observerLink = `pdo${tag}`;
  const created: string[] = [];
  let observerMade = false;
  const remove = (): void => {
    if (observerMade) run('ip', ['link', 'del', observerLink]);
    observerMade = false;
    for (const ns of created.splice(0).reverse()) run('ip', ['netns', 'del', ns]);
  };
  const addNs = (ns: string): void => {
    must('ip', ['netns', 'add', ns]);
    created.push(ns);
    must('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
  };
  const hosts = new Map<string, ChaosHost>();
  let observerIp: string;
  try {
    const x = freeSubnet(Number.parseInt(tag, 36) % 256);
    addNs(hub);
    must('ip', ['-n', hub, 'link', 'add', 'br0', 'type', 'bridge']);
    must('ip', ['-n', hub, 'link', 'set', 'br0', 'up']);
    nft(hub, `add table bridge ${NFT_TABLE}`);
    nft(hub, `add chain bridge ${NFT_TABLE} ports { type filter hook forward priority 0; policy accept; }`);
    ids.forEach((id, i) => {
      assert.ok(/^[a-z0-9]{1,8}$/.test(id), `host id ${JSON.stringify(id)}`);
      const h: ChaosHost = { id, netns: `pdch-${tag}-${id}`, ip: `10.251.${x}.${i + 1}` };
      addNs(h.netns);
      must('ip', ['-n', hub, 'link', 'add', id, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', h.netns]);
      must('ip', ['-n', hub, 'link', 'set', id, 'master', 'br0', 'up']);
      must('ip', ['-n', h.netns, 'addr', 'add', `${h.ip}/24`, 'dev', 'eth0']);
      must('ip', ['-n', h.netns, 'link', 'set', 'eth0', 'up']);
      nft(hub, `add chain bridge ${NFT_TABLE} h_${id}`);
      nft(hub, `add rule bridge ${NFT_TABLE} ports jump h_${id}`);
      hosts.set(id, h);
    });
    observerIp = `10.251.${x}.254`;
    must('ip', ['link', 'add', observerLink, 'type', 'veth', 'peer', 'name', 'obs', 'netns', hub]);
    observerMade = true;
    must('ip', ['-n', hub, 'link', 'set', 'obs', 'master', 'br0', 'up']);
    must('ip', ['addr', 'add', `${observerIp}/24`, 'dev', observerLink]);
    must('ip', ['link', 'set', observerLink, 'up']);
  } catch (e) {
    remove();
    throw e;
  }

  const host = (id: string): ChaosHost => {
    const h = hosts.get(id);
    assert.ok(h, `no host ${id} in the rig`);
    return h;
  };
  const tbf = (where: 'host' | 'port', id: string, kbit: number): void => {
    const h = host(id);
    const at = where === 'host' ? ['-n', h.netns, 'qdisc', 'replace', 'dev', 'eth0'] : ['-n', hub, 'qdisc', 'replace', 'dev', id];
    must('tc', [...at, 'root', 'tbf', 'rate', `${kbit}kbit`, 'burst', '3000', 'latency', '1000ms']);
  };
  return {
    hub,
    hosts,
    observerIp,
    host,
    linkDown: (id) => must('ip', ['-n', host(id).netns, 'link', 'set', 'eth0', 'down']),
    drop: (id, direction) => {
      host(id);
      if (direction !== 'in') nft(hub, `add rule bridge ${NFT_TABLE} h_${id} iifname "${id}" drop`);
      if (direction !== 'out') nft(hub, `add rule bridge ${NFT_TABLE} h_${id} oifname "${id}" drop`);
    },
    slow: (id, kbit) => {
      for (const where of ['host', 'port'] as const) tbf(where, id, kbit);
    },
    heal: (id) => {
      const h = host(id);
      nft(hub, `flush chain bridge ${NFT_TABLE} h_${id}`);
      run('tc', ['-n', h.netns, 'qdisc', 'del', 'dev', 'eth0', 'root']);
      run('tc', ['-n', hub, 'qdisc', 'del', 'dev', id, 'root']);
      must('ip', ['-n', h.netns, 'link', 'set', 'eth0', 'up']);
    },
    remove,
  };
}
