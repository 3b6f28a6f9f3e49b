/**
 * Certificates for the etcd that deploy/ runs, made with the `openssl` command (Node has no
 * API that creates X.509 certificates): a CA, a server certificate (client port) and a peer
 * certificate (member to member), both naming every member's stable DNS name and the client
 * Service, and a client certificate for podipam's processes. P-256 keys, unencrypted (the
 * pods read them from Secrets). The CA's key stays in the directory only: it signs new
 * certificates and goes into no Secret.
 *
 * Names, for StatefulSet NAME in namespace NS with M members and cluster domain D:
 *   NAME-0.NAME-peer.NS.svc … NAME-(M-1).NAME-peer.NS.svc (and .D), *.NAME-peer.NS.svc(.D),
 *   the client Service NAME, NAME.NS, NAME.NS.svc(.D), localhost, 127.0.0.1, ::1.
 * The client certificate has no Common Name (etcd's JSON gateway refuses one when etcd
 * authentication is on) and may only authenticate clients.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface EtcdCertOptions {
  /** Directory to write into: created if missing, must hold no certificate of ours yet. */
  readonly dir: string;
  readonly namespace: string;
  /** The StatefulSet (and client Service) name; the peers' headless Service is NAME-peer. */
  readonly name: string;
  readonly members: number;
  /** Validity of the server, peer and client certificates. */
  readonly days: number;
  /** Validity of the CA. */
  readonly caDays: number;
  readonly clusterDomain: string;
}

/** The files written, by role. */
export interface EtcdCertFiles {
  readonly ca: string;
  readonly caKey: string;
  readonly server: { readonly cert: string; readonly key: string };
  readonly peer: { readonly cert: string; readonly key: string };
  readonly client: { readonly cert: string; readonly key: string };
  /** The DNS names and IP addresses in the server and peer certificates. */
  readonly dnsNames: readonly string[];
  readonly ips: readonly string[];
}

const FILES = ['ca.crt', 'ca.key', 'server.crt', 'server.key', 'peer.crt', 'peer.key', 'client.crt', 'client.key'];
const DNS_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** Checks the options: errors name the flag and its value. */
export function checkEtcdCertOptions(o: EtcdCertOptions): void {
  if (!DNS_LABEL.test(o.namespace))
    throw new TypeError(`--namespace ${JSON.stringify(o.namespace)} is not a DNS label (lower case letters, digits, "-", at most 63)`);
  if (!DNS_LABEL.test(o.name) || o.name.length > 52)
    throw new TypeError(`--name ${JSON.stringify(o.name)} is not a DNS label of at most 52 characters (a StatefulSet name)`);
  if (!/^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/.test(o.clusterDomain)) throw new TypeError(`--cluster-domain ${JSON.stringify(o.clusterDomain)} is not a DNS name`);
  if (!Number.isSafeInteger(o.members) || o.members < 1 || o.members > 9) throw new RangeError(`--members ${o.members} is not 1-9`);
  for (const [flag, v] of [
    ['--days', o.days],
    ['--ca-days', o.caDays],
  ] as const) {
    if (!Number.isSafeInteger(v) || v < 1 || v > 36500) throw new RangeError(`${flag} ${v} is not 1-36500`);
  }
  if (o.caDays < o.days) throw new RangeError(`--ca-days ${o.caDays} is shorter than --days ${o.days}: the certificates would outlive their CA`);
}

/** The server and peer certificates' names (see the header). */
export function etcdCertNames(o: Pick<EtcdCertOptions, 'namespace' | 'name' | 'members' | 'clusterDomain'>): { dnsNames: string[]; ips: string[] } {
  const peer = `${o.name}-peer.${o.namespace}.svc`;
  const members = Array.from({ length: o.members }, (_, i) => `${o.name}-${i}.${peer}`);
  const dnsNames = [
    ...members,
    ...members.map((m) => `${m}.${o.clusterDomain}`),
    `*.${peer}`,
    `*.${peer}.${o.clusterDomain}`,
    o.name,
    `${o.name}.${o.namespace}`,
    `${o.name}.${o.namespace}.svc`,
    `${o.name}.${o.namespace}.svc.${o.clusterDomain}`,
    'localhost',
  ];
  return { dnsNames, ips: ['127.0.0.1', '::1'] };
}

function openssl(dir: string, args: string[]): void {
  try {
    execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    const err = e as NodeJS.ErrnoException & { stderr?: Buffer };
    if (err.code === 'ENOENT')
      throw new Error('the openssl command is not installed (Debian: apt-get install openssl); it makes the certificates', { cause: e });
    throw new Error(`openssl ${args[0] ?? ''} failed: ${err.stderr?.toString().trim() ?? err.message}`, { cause: e });
  }
}

/** Makes the CA and the three certificates in `o.dir` (see the header). Refuses to overwrite any of them. */
export function makeEtcdCerts(o: EtcdCertOptions): EtcdCertFiles {
  checkEtcdCertOptions(o);
  mkdirSync(o.dir, { recursive: true, mode: 0o700 });
  const present = FILES.filter((f) => existsSync(join(o.dir, f)));
  if (present.length > 0)
    throw new Error(`--dir ${o.dir} already holds ${present.join(', ')}: choose an empty directory (new certificates would not match the running members')`);
  const { dnsNames, ips } = etcdCertNames(o);
  const key = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(o.dir, [
    'req',
    '-x509',
    ...key,
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-days',
    String(o.caDays),
    '-subj',
    `/O=podipam/CN=${o.name} CA (${o.namespace})`,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  const san = `subjectAltName=${[...dnsNames.map((d) => `DNS:${d}`), ...ips.map((ip) => `IP:${ip}`)].join(',')}`;
  // etcd's JSON gateway dials the member's own gRPC port with the server certificate as its
  // client certificate, and members dial each other with the peer one: both need clientAuth.
  const ext = {
    server: `${san}\nextendedKeyUsage=serverAuth,clientAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n`,
    peer: `${san}\nextendedKeyUsage=serverAuth,clientAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n`,
    client: 'extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature\n',
  };
  const subject = { server: `/O=podipam/CN=${o.name}`, peer: `/O=podipam/CN=${o.name}-peer`, client: '/O=podipam' };
  for (const role of ['server', 'peer', 'client'] as const) {
    writeFileSync(join(o.dir, `${role}.ext`), ext[role]);
    openssl(o.dir, ['req', '-new', ...key, '-keyout', `${role}.key`, '-out', `${role}.csr`, '-subj', subject[role]]);
    openssl(o.dir, [
      'x509',
      '-req',
      '-in',
      `${role}.csr`,
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      `${role}.crt`,
      '-days',
      String(o.days),
      '-extfile',
      `${role}.ext`,
    ]);
  }
  // Only the certificates and keys stay: the requests, extension files and serial are spent.
  for (const f of readdirSync(o.dir)) if (/\.(csr|ext|srl)$/.test(f)) rmSync(join(o.dir, f), { force: true });
  for (const f of FILES) if (f.endsWith('.key')) chmodSync(join(o.dir, f), 0o600);
  const at = (f: string) => join(o.dir, f);
  return {
    ca: at('ca.crt'),
    caKey: at('ca.key'),
    server: { cert: at('server.crt'), key: at('server.key') },
    peer: { cert: at('peer.crt'), key: at('peer.key') },
    client: { cert: at('client.crt'), key: at('client.key') },
    dnsNames,
    ips,
  };
}

/** The Secret names deploy/ mounts. */
export const ETCD_SECRETS = { members: 'podipam-etcd-tls', client: 'podipam-etcd-client-tls' } as const;

/** The `kubectl create secret` commands that load `files` into the Secrets deploy/ mounts. */
export function etcdSecretCommands(files: EtcdCertFiles, namespace: string): string[] {
  return [
    `kubectl -n ${namespace} create secret generic ${ETCD_SECRETS.members} --from-file=ca.crt=${files.ca} --from-file=server.crt=${files.server.cert} --from-file=server.key=${files.server.key} --from-file=peer.crt=${files.peer.cert} --from-file=peer.key=${files.peer.key}`,
    `kubectl -n ${namespace} create secret generic ${ETCD_SECRETS.client} --from-file=ca.crt=${files.ca} --from-file=tls.crt=${files.client.cert} --from-file=tls.key=${files.client.key}`,
  ];
}
