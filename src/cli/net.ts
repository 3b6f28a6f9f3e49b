/**
 * `podipam net add|del|check|status|gc|list` (a libcni-compatible runtime client, like cnitool
 * but with containerd's multi-network attach and clean-up) and `podipam demo`.
 */
import type { Command } from 'commander';
import { UsageError } from './usage-error.js';
import { printJson, printTable } from './output.js';
import { parseIntFlag } from './parse-flag.js';
import type { CniRuntime, NetworkConfigList, PodNetwork } from '../runtime/index.js';

interface NetOpts {
  confDir: string;
  binDir: string;
  cacheDir: string;
  timeout: string;
}

interface AttachOpts extends NetOpts {
  container: string;
  ifname?: string;
  netns?: string;
  args?: string;
  cap: string[];
  json?: boolean;
}

const NEW_NETNS_PREFIX = 'podipam-';

function common(c: Command): Command {
  return c
    .option('--conf-dir <dir>', 'network configuration directory', '/etc/cni/net.d')
    .option('--bin-dir <dirs>', 'plugin directories, ":"-separated', '/opt/cni/bin')
    .option('--cache-dir <dir>', 'libcni cache directory (results in <dir>/results)', '/var/lib/cni')
    .option('--timeout <seconds>', 'bound on each plugin call', '60');
}

async function runtimeOf(o: NetOpts): Promise<CniRuntime> {
  const { CniRuntime, splitPath } = await import('../runtime/index.js');
  const seconds = parseIntFlag('--timeout', o.timeout);
  if (seconds <= 0) throw new UsageError(`invalid --timeout ${JSON.stringify(o.timeout)}: must be a positive number of seconds`);
  const binDirs = splitPath(o.binDir);
  if (binDirs.length === 0) throw new UsageError(`invalid --bin-dir ${JSON.stringify(o.binDir)}: no directory`);
  return new CniRuntime({ binDirs, cacheDir: o.cacheDir, timeoutMs: seconds * 1000, onStderr: (s) => process.stderr.write(s) });
}

async function loadAll(o: NetOpts, names: readonly string[]): Promise<NetworkConfigList[]> {
  const { loadNetwork } = await import('../runtime/index.js');
  return names.map((n) => loadNetwork(o.confDir, n));
}

/**
 * The lists for a DEL: from the conf dir, or — for a network whose config is gone — the config
 * the cache recorded at ADD (libcni's GetNetworkListCachedConfig), so a pod can still be removed.
 */
async function loadForDel(rt: CniRuntime, o: AttachOpts, names: readonly string[]): Promise<NetworkConfigList[]> {
  const { loadNetwork, parseConfList, NetworkNotFoundError } = await import('../runtime/index.js');
  return names.map((n) => {
    try {
      return loadNetwork(o.confDir, n);
    } catch (e) {
      const hit = rt.cache.list(o.container).find((a) => a.network === n);
      if (!(e instanceof NetworkNotFoundError) || !hit) throw e;
      process.stderr.write(`podipam: network "${n}" is no longer in ${o.confDir}: deleting with the config cached at ADD\n`);
      return parseConfList(`(cached config of ${n})`, hit.config);
    }
  });
}

/** CNI_ARGS text (`K=V;K2=V2`) → pairs; UsageError naming the bad pair. */
function parseArgs(text: string | undefined): [string, string][] {
  if (!text) return [];
  return text.split(';').map((pair) => {
    const i = pair.indexOf('=');
    if (i <= 0) throw new UsageError(`invalid --args pair ${JSON.stringify(pair)}: use KEY=VALUE[;KEY=VALUE…]`);
    return [pair.slice(0, i), pair.slice(i + 1)];
  });
}

/** `--cap key=JSON` (repeatable) → capability args. */
function parseCaps(list: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const c of list) {
    const i = c.indexOf('=');
    if (i <= 0)
      throw new UsageError(`invalid --cap ${JSON.stringify(c)}: use NAME=JSON, e.g. portMappings='[{"hostPort":8080,"containerPort":80,"protocol":"tcp"}]'`);
    try {
      out[c.slice(0, i)] = JSON.parse(c.slice(i + 1));
    } catch (e) {
      throw new UsageError(`invalid --cap ${JSON.stringify(c)}: the value is not JSON: ${(e as Error).message}`, { cause: e });
    }
  }
  return out;
}

/** Interfaces for the networks: --ifname for one network, else eth0, eth1, … in order. */
function ifnames(o: AttachOpts, count: number): string[] {
  if (o.ifname !== undefined) {
    const list = o.ifname.split(',');
    if (list.length !== count) throw new UsageError(`--ifname ${JSON.stringify(o.ifname)}: give one name per network (${count}), comma-separated`);
    return list;
  }
  return Array.from({ length: count }, (_, i) => `eth${i}`);
}

const collect = (v: string, prev: string[]) => [...prev, v];

function attachCommand(net: Command, verb: string, description: string): Command {
  return common(net.command(verb).description(description))
    .argument('<network...>', 'network name(s) from the conf dir')
    .requiredOption('--container <id>', 'container id')
    .option('--ifname <names>', 'interface name(s), comma-separated, one per network (default eth0, eth1, …; from the cache on del/check)')
    .option('--args <pairs>', 'CNI_ARGS, KEY=VALUE;KEY=VALUE')
    .option('--cap <name=json>', 'capability argument (repeatable), sent to plugins that declare it', collect, [] as string[]);
}

/** The attachments del/check act on: from the cache when it knows them, else --ifname / ethN. */
function resolveAttachments(rt: CniRuntime, lists: readonly NetworkConfigList[], o: AttachOpts): { nets: PodNetwork[]; netns: string } {
  const cached = rt.cache.list(o.container);
  const names = o.ifname !== undefined ? ifnames(o, lists.length) : undefined;
  let netns = o.netns ?? '';
  const nets = lists.map((list, i) => {
    const hit = names ? cached.find((a) => a.network === list.name && a.ifname === names[i]) : cached.find((a) => a.network === list.name);
    if (hit && !netns) netns = hit.netns;
    return { list, ifname: names?.[i] ?? hit?.ifname ?? `eth${i}` };
  });
  return { nets, netns };
}

/** Registers `podipam net …` and `podipam demo`. */
export function registerNet(program: Command): void {
  const net = program.command('net').description('attach pods to CNI networks as a container runtime does (libcni-compatible)');

  attachCommand(net, 'add', 'ADD the container to the network(s): all in parallel, all or nothing')
    .option('--netns <path|name|new>', 'the network namespace; "new" creates /var/run/netns/podipam-<container> (removed by del)')
    .option('--json', 'print the results as JSON')
    .action(async (names: string[], o: AttachOpts) => {
      const [rt, lists] = [await runtimeOf(o), await loadAll(o, names)];
      const { attachNetworks, createNetns, deleteNetns, netnsPath } = await import('../runtime/index.js');
      const caps = parseCaps(o.cap);
      const args = parseArgs(o.args);
      const ifs = ifnames(o, lists.length);
      if (!o.netns) throw new UsageError('net add needs --netns PATH (or a name under /var/run/netns, or "new")');
      const created = o.netns === 'new' ? `${NEW_NETNS_PREFIX}${o.container}` : undefined;
      const netns = created ? createNetns(created) : o.netns.includes('/') ? o.netns : netnsPath(o.netns);
      try {
        const results = await attachNetworks(
          rt,
          { containerId: o.container, netns, args, capabilityArgs: caps },
          lists.map((list, i) => ({ list, ifname: ifs[i]! })),
        );
        if (o.json) return printJson(results.map((r, i) => ({ network: lists[i]!.name, ifname: ifs[i], result: r })));
        const { resultAddresses } = await import('../runtime/index.js');
        process.stdout.write(`container ${o.container} in ${netns}\n`);
        results.forEach((r, i) => process.stdout.write(`  ${lists[i]!.name} ${ifs[i]}: ${resultAddresses(r).join(', ') || '(no addresses)'}\n`));
      } catch (e) {
        if (created) deleteNetns(created);
        throw e;
      }
    });

  attachCommand(net, 'del', 'DEL the container from the network(s) (reverse chain, cached result); removes a netns that add --netns new made')
    .option('--netns <path>', 'the network namespace (default: as cached)')
    .action(async (names: string[], o: AttachOpts) => {
      const rt = await runtimeOf(o);
      const lists = await loadForDel(rt, o, names);
      const { detachNetworks, deleteNetns } = await import('../runtime/index.js');
      const { nets, netns } = resolveAttachments(rt, lists, o);
      await detachNetworks(
        rt,
        { containerId: o.container, netns, args: o.args ? parseArgs(o.args) : undefined, capabilityArgs: o.cap.length ? parseCaps(o.cap) : undefined },
        nets,
      );
      const ours = `/var/run/netns/${NEW_NETNS_PREFIX}${o.container}`;
      if (netns === ours && rt.cache.list(o.container).length === 0) deleteNetns(`${NEW_NETNS_PREFIX}${o.container}`);
      for (const n of nets) process.stdout.write(`deleted ${o.container} from ${n.list.name} (${n.ifname})\n`);
    });

  attachCommand(net, 'check', "CHECK the container's attachment(s) against the cached results")
    .option('--netns <path>', 'the network namespace (default: as cached)')
    .action(async (names: string[], o: AttachOpts) => {
      const [rt, lists] = [await runtimeOf(o), await loadAll(o, names)];
      const { nets, netns } = resolveAttachments(rt, lists, o);
      for (const n of nets) {
        await rt.check(n.list, { containerId: o.container, netns, ifname: n.ifname, args: o.args ? parseArgs(o.args) : undefined });
        process.stdout.write(`${n.list.name} ${n.ifname}: ok\n`);
      }
    });

  common(net.command('status').description('STATUS: can the network(s) take new pods? (asked from cniVersion 1.1.0)'))
    .argument('<network...>', 'network name(s)')
    .action(async (names: string[], o: NetOpts) => {
      const [rt, lists] = [await runtimeOf(o), await loadAll(o, names)];
      for (const l of lists) {
        const asked = await rt.status(l);
        process.stdout.write(`${l.name}: ${asked ? 'ready' : `not asked (cniVersion ${JSON.stringify(l.cniVersion)} < 1.1.0, as libcni)`}\n`);
      }
    });

  common(net.command('gc').description('GC: DEL every cached attachment whose netns is gone, then GC the plugins (>= 1.1.0)'))
    .argument('[network...]', 'network name(s) (default: every network in the conf dir)')
    .option('--keep <container/ifname>', 'also keep this attachment (repeatable)', collect, [] as string[])
    .action(async (names: string[], o: NetOpts & { keep: string[] }) => {
      const rt = await runtimeOf(o);
      const { listNetworks } = await import('../runtime/index.js');
      const { existsSync } = await import('node:fs');
      const errors: string[] = [];
      const lists = names.length ? await loadAll(o, names) : listNetworks(o.confDir);
      if (!names.length) {
        // Attachments of networks whose config is gone: GC them with the config cached at ADD.
        const { parseConfList } = await import('../runtime/index.js');
        for (const a of rt.cache.list()) {
          if (lists.some((l) => l.name === a.network)) continue;
          try {
            lists.push(parseConfList(`(cached config of ${a.network})`, a.config));
          } catch (e) {
            errors.push(`${a.network} ${a.containerId} ${a.ifname}: ${(e as Error).message}`);
          }
        }
      }
      const keep = o.keep.map((k) => {
        const [containerId, ifname, ...rest] = k.split('/');
        if (!containerId || !ifname || rest.length) throw new UsageError(`invalid --keep ${JSON.stringify(k)}: use CONTAINER/IFNAME`);
        return { containerId, ifname };
      });
      const valid = [
        ...keep,
        ...rt.cache
          .list()
          .filter((a) => a.netns !== '' && existsSync(a.netns))
          .map((a) => ({ containerId: a.containerId, ifname: a.ifname })),
      ];
      for (const l of lists) {
        try {
          for (const a of await rt.gc(l, valid)) process.stdout.write(`deleted stale ${a.network} ${a.containerId} ${a.ifname} (netns ${a.netns || 'none'})\n`);
        } catch (e) {
          errors.push((e as Error).message);
        }
      }
      if (errors.length) throw new Error(errors.join('; '));
    });

  net
    .command('list')
    .description('the attachments the result cache holds')
    .option('--cache-dir <dir>', 'libcni cache directory', '/var/lib/cni')
    .option('--container <id>', 'only this container')
    .option('--json', 'print a JSON array')
    .action(async (o: { cacheDir: string; container?: string; json?: boolean }) => {
      const { ResultCache, resultAddresses } = await import('../runtime/index.js');
      const { existsSync } = await import('node:fs');
      const rows = new ResultCache(o.cacheDir).list(o.container).map((a) => ({
        network: a.network,
        containerId: a.containerId,
        ifname: a.ifname,
        netns: a.netns,
        netnsExists: a.netns !== '' && existsSync(a.netns),
        addresses: resultAddresses(a.result),
      }));
      if (o.json) return printJson(rows);
      printTable(rows, [
        { header: 'NETWORK', value: (r) => r.network },
        { header: 'CONTAINER', value: (r) => r.containerId },
        { header: 'IFNAME', value: (r) => r.ifname },
        { header: 'NETNS', value: (r) => `${r.netns || '-'}${r.netns && !r.netnsExists ? ' (gone)' : ''}` },
        { header: 'ADDRESSES', value: (r) => r.addresses.join(',') },
      ]);
    });

  program
    .command('demo')
    .description('bring up pods in network namespaces through the real chain (bridge + podipam), ping, tear down (root)')
    .option('--pods <n>', 'number of pods', '4')
    .option('--backend <name>', 'IPAM back end: local, cluster (scratch SQLite store), agent (a podipam agent the demo runs)', 'local')
    .option('--subnet <cidr>', 'IPv4 subnet for the pods', '10.250.0.0/24')
    .option('--bin-dir <dirs>', 'where the reference plugins are, ":"-separated', '/opt/cni/bin:/usr/lib/cni')
    .option('--timeout <seconds>', 'bound on each plugin call', '60')
    .option('--hold', 'keep the pods up until Ctrl-C')
    .action(async (o: { pods: string; backend: string; subnet: string; binDir: string; timeout: string; hold?: boolean }) => {
      const { runDemo, DemoInterruptedError } = await import('../runtime/demo.js');
      const { splitPath } = await import('../runtime/index.js');
      const ac = new AbortController();
      const onSignal = () => ac.abort();
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
      try {
        const report = await runDemo({
          pods: parseIntFlag('--pods', o.pods),
          backend: o.backend,
          subnet: o.subnet,
          pluginDirs: splitPath(o.binDir),
          timeoutMs: parseIntFlag('--timeout', o.timeout) * 1000,
          out: (l) => process.stdout.write(`${l}\n`),
          signal: ac.signal,
          hold: o.hold
            ? (signal) => {
                process.stdout.write('pods are up; press Ctrl-C to tear down\n');
                return new Promise((resolve) => {
                  // Signal handlers do not keep Node's event loop alive; this timer does.
                  const keepAlive = setInterval(() => {}, 1 << 30);
                  const done = () => {
                    clearInterval(keepAlive);
                    resolve();
                  };
                  if (!signal || signal.aborted) done();
                  else signal.addEventListener('abort', done, { once: true });
                });
              }
            : undefined,
        }).catch((e: unknown) => {
          if (e instanceof RangeError) throw new UsageError(e.message);
          if (e instanceof DemoInterruptedError) return undefined;
          throw e;
        });
        if (!report) {
          process.exitCode = 130;
          return;
        }
        if (report.pings.some((p) => !p.ok) || report.teardown.length) process.exitCode = 1;
      } finally {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
      }
    });
}
