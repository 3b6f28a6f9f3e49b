/**
 * `podipam import calico [FILE|-] [--from-etcd URL[,URL…]] [--etcd-prefix /calico]
 * [--network NAME[,NAME…]] [--ifname eth0] [--pool-map calicoPool=podipamPool …]
 * [--dry-run] [--skip-conflicts] [-o table|json]`: adopts Calico's IPAM state — its IP pools,
 * blocks with their node affinities, every allocated address with its pod, the nodes' tunnel
 * addresses — into the cluster store, so a cluster moves from Calico IPAM to podipam without
 * restarting its pods. The source is exactly one of: FILE (or `-`, stdin), the JSON of
 * `kubectl get ippools.crd.projectcalico.org,ipamblocks.crd.projectcalico.org,
 * blockaffinities.crd.projectcalico.org,ipamhandles.crd.projectcalico.org -o json` (Calico's
 * Kubernetes datastore); or `--from-etcd`, Calico's etcd v3 datastore, read-only under
 * `--etcd-prefix`. The mapping is src/import/calico/calico-plan.ts; the runner (report, dry
 * run, conflicts, exit codes) is import-run.ts.
 */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { CNI_NAME } from '../model/cni-name.js';
import { DNS_SUBDOMAIN } from '../model/node-name.js';
import { reservedNetwork } from '../model/reserved-network.js';
import type { ImportPlan } from '../import/import-plan.js';
import type { ExistingPool } from '../import/calico/calico-plan.js';
import { openCommandStore } from './datastore-url.js';
import { type ImportRunFlags, importOutputFormat, runImport, withImportRunOptions } from './import-run.js';
import { UsageError } from './usage-error.js';

interface CalicoFlags extends ImportRunFlags {
  readonly fromEtcd?: string;
  readonly etcdPrefix: string;
  readonly network: string;
  readonly ifname: string;
  readonly poolMap: string[];
}

export function registerImportCalico(imp: Command): void {
  withImportRunOptions(
    imp
      .command('calico')
      .argument(
        '[file]',
        "the JSON of kubectl get ippools.crd.projectcalico.org,ipamblocks.crd.projectcalico.org,blockaffinities.crd.projectcalico.org,ipamhandles.crd.projectcalico.org -o json ('-': stdin)",
      )
      .description(
        "adopt Calico IPAM's pools, blocks, pod addresses and tunnel addresses from its Kubernetes datastore (FILE) or its etcd datastore (--from-etcd)",
      )
      .option('--from-etcd <urls>', "read Calico's etcd v3 datastore instead: etcd://HOST:PORT[,…], etcds://…?ca=…, or Calico's http(s)://HOST:PORT[,…]")
      .option('--etcd-prefix <prefix>', "Calico's etcd key prefix", '/calico')
      .option('--network <names>', "the CNI network name(s) of Calico's handles <network>.<containerID>, comma-separated", 'k8s-pod-network')
      .option('--ifname <name>', 'the interface name of every imported attachment (Calico handles have none)', 'eth0')
      .option(
        '--pool-map <calico=podipam>',
        "put the Calico pool's addresses into this podipam pool (existing, or created under that name); repeatable",
        (v: string, acc: string[]) => [...acc, v],
        [],
      ),
  ).action(async (file: string | undefined, flags: CalicoFlags, cmd: Command) => {
    await importCalico(file, flags, cmd);
  });
}

async function importCalico(file: string | undefined, flags: CalicoFlags, cmd: Command): Promise<void> {
  importOutputFormat(flags.output);
  if ((file === undefined) === (flags.fromEtcd === undefined)) {
    throw new UsageError("give exactly one source: FILE (or - for stdin), the kubectl List of Calico's CRDs, or --from-etcd URL[,URL…]");
  }
  const networks = parseNetworks(flags.network);
  const ifname = parseIfname(flags.ifname);
  const poolMap = parsePoolMap(flags.poolMap);
  const options = { networks, ifname, poolMap, existingPools: await existingPools(cmd) };
  let plan: ImportPlan;
  if (file !== undefined) {
    const { CalicoSourceError, parseCalicoKdd } = await import('../import/calico/parse-calico-kdd.js');
    const what = file === '-' ? 'stdin' : file;
    let text: string;
    try {
      text = readFileSync(file === '-' ? 0 : file, 'utf8');
    } catch (e) {
      throw new UsageError(`cannot read ${what}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, { cause: e });
    }
    try {
      plan = parseCalicoKdd(text, what, options);
    } catch (e) {
      if (e instanceof CalicoSourceError) throw new UsageError(e.message, { cause: e });
      throw e;
    }
  } else {
    const prefix = flags.etcdPrefix;
    if (!/^\/[^\s]*$/.test(prefix))
      throw new UsageError(`invalid --etcd-prefix ${JSON.stringify(prefix)}: an etcd key prefix starting with "/" (Calico's default: /calico)`);
    const url = calicoEtcdUrl(flags.fromEtcd as string);
    const { readCalicoEtcdPairs } = await import('../import/calico/read-calico-etcd.js');
    const { parseCalicoEtcd } = await import('../import/calico/parse-calico-etcd.js');
    plan = parseCalicoEtcd(await readCalicoEtcdPairs(url, prefix), prefix, options);
  }
  await runImport(cmd, plan, flags);
}

/**
 * `--from-etcd` as a podipam etcd URL: `etcd://…` and `etcds://…` as they are; Calico's
 * `etcdEndpoints` form (`http://h:2379,http://h2:2379`, or all https — TLS files then from
 * PODIPAM_ETCD_CA / _CERT / _KEY) becomes `etcd://h:2379,h2:2379` (`etcds://`).
 */
export function calicoEtcdUrl(text: string): string {
  if (/^etcds?:\/\//i.test(text)) return text;
  const parts = text.split(',').map((p) => p.trim());
  const schemes = new Set(parts.map((p) => /^(https?):\/\//i.exec(p)?.[1]?.toLowerCase()));
  if (schemes.has(undefined) || schemes.size !== 1) {
    throw new UsageError(
      `invalid --from-etcd ${JSON.stringify(text)}: expected etcd://HOST:PORT[,…], etcds://HOST:PORT[,…][?ca=FILE&cert=FILE&key=FILE], or http(s)://HOST:PORT[,…] (all http or all https)`,
    );
  }
  const hosts = parts.map((p) => p.replace(/^https?:\/\//i, '').replace(/\/+$/, ''));
  return `${schemes.has('https') ? 'etcds' : 'etcd'}://${hosts.join(',')}`;
}

function parseNetworks(text: string): string[] {
  const names = text.split(',').map((n) => n.trim());
  for (const n of names) {
    if (!CNI_NAME.test(n))
      throw new UsageError(`invalid --network ${JSON.stringify(n)}: a CNI network name (letters, digits, "_", "." and "-", starting with a letter or digit)`);
    const reserved = reservedNetwork('--network', n);
    if (reserved) throw new UsageError(reserved);
  }
  return names;
}

function parseIfname(text: string): string {
  if (text === '' || Buffer.byteLength(text) > 15 || text === '.' || text === '..' || /[/:\s\u0085]/u.test(text)) {
    throw new UsageError(`invalid --ifname ${JSON.stringify(text)}: an interface name (1-15 bytes, not . or .., no /, : or white space)`);
  }
  return text;
}

function parsePoolMap(entries: readonly string[]): Map<string, string> {
  const map = new Map<string, string>();
  for (const entry of entries.flatMap((e) => e.split(','))) {
    const m = /^([^=]+)=([^=]+)$/.exec(entry.trim());
    if (!m || !DNS_SUBDOMAIN.test(m[1]!) || !DNS_SUBDOMAIN.test(m[2]!)) {
      throw new UsageError(`invalid --pool-map ${JSON.stringify(entry)}: expected CALICO_POOL=PODIPAM_POOL, both pool names (DNS subdomains)`);
    }
    if (map.has(m[1]!)) throw new UsageError(`invalid --pool-map: Calico pool ${JSON.stringify(m[1])} is mapped twice`);
    map.set(m[1]!, m[2]!);
  }
  return map;
}

/** The store's pools (none when a SQLite store does not exist yet: the import creates it). */
async function existingPools(cmd: Command): Promise<ExistingPool[]> {
  const { StoreMissingError } = await import('../store/index.js');
  let store;
  try {
    store = await openCommandStore(cmd, 'read');
  } catch (e) {
    if (e instanceof StoreMissingError) return [];
    throw e;
  }
  try {
    const { ClusterIpam } = await import('../cluster/index.js');
    const { formatPrefix } = await import('../ip/index.js');
    const pools = await new ClusterIpam(store, { writer: 'cli', why: 'import' }).listPools();
    return pools.map((p) => ({ name: p.name, cidr: formatPrefix(p.cidr), blockSize: p.blockSize }));
  } finally {
    await store.close();
  }
}
