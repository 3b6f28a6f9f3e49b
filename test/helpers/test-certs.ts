/**
 * Throw-away certificates for TLS tests, made with the `openssl` command (P-256 keys, valid
 * two days): a CA, a server certificate for the name SERVER_NAME only (no IP address, so a
 * client on 127.0.0.1 must give the server name), a client certificate (without a Common
 * Name, see below), and a second CA that signed neither (for "untrusted" tests).
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const SERVER_NAME = 'etcd.podipam.test';

export interface TestCerts {
  readonly dir: string;
  readonly caFile: string;
  readonly serverCert: string;
  readonly serverKey: string;
  readonly clientCert: string;
  readonly clientKey: string;
  /** A CA that signed none of the above. */
  readonly otherCaFile: string;
}

function openssl(dir: string, args: string[]): void {
  try {
    execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    const err = e as NodeJS.ErrnoException & { stderr?: Buffer };
    if (err.code === 'ENOENT')
      throw new Error('openssl is not installed: the TLS tests make their certificates with it (scripts/install-test-deps.sh installs it)', { cause: e });
    throw new Error(`openssl ${args.join(' ')} failed: ${err.stderr?.toString() ?? err.message}`, { cause: e });
  }
}

/** Makes the certificates in `dir` (which must exist). */
export function makeTestCerts(dir: string): TestCerts {
  const key = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  const ca = (name: string) =>
    openssl(dir, [
      'req',
      '-x509',
      ...key,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.crt`,
      '-days',
      '2',
      '-subj',
      `/CN=podipam test ${name}`,
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ]);
  ca('ca');
  ca('other-ca');
  // etcd's JSON gateway dials etcd's own gRPC port with the server certificate as client, so
  // with --client-cert-auth that certificate must allow client use too.
  writeFileSync(
    join(dir, 'server.ext'),
    `subjectAltName=DNS:${SERVER_NAME}\nextendedKeyUsage=serverAuth,clientAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n`,
  );
  writeFileSync(join(dir, 'client.ext'), 'extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature\n');
  // No Common Name in the client certificate: with --client-cert-auth and auth enabled,
  // etcd's JSON gateway refuses (HTTP 400) every client certificate that has one.
  for (const [name, subject] of [
    ['server', '/CN=podipam-test-server'],
    ['client', '/O=podipam-test-client'],
  ] as const) {
    openssl(dir, ['req', '-new', ...key, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject]);
    openssl(dir, [
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      `${name}.crt`,
      '-days',
      '2',
      '-extfile',
      `${name}.ext`,
    ]);
  }
  return {
    dir,
    caFile: join(dir, 'ca.crt'),
    serverCert: join(dir, 'server.crt'),
    serverKey: join(dir, 'server.key'),
    clientCert: join(dir, 'client.crt'),
    clientKey: join(dir, 'client.key'),
    otherCaFile: join(dir, 'other-ca.crt'),
  };
}

/** etcd's TLS settings for `certs`: HTTPS with SERVER_NAME, client certificates required (startEtcd's `tls`). */
export function etcdTlsWith(certs: TestCerts) {
  return {
    caFile: certs.caFile,
    certFile: certs.serverCert,
    keyFile: certs.serverKey,
    serverName: SERVER_NAME,
    clientCertAuth: true,
    client: { certFile: certs.clientCert, keyFile: certs.clientKey },
  } as const;
}

/** A CA and a server certificate for `ip` (an IP SAN, as a pod reaches the API server by its Service address). */
export function makeServerCertForIp(dir: string, ip: string): { caFile: string; certFile: string; keyFile: string } {
  const key = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(dir, [
    'req',
    '-x509',
    ...key,
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-days',
    '2',
    '-subj',
    '/CN=podipam test kube CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  writeFileSync(
    join(dir, 'server.ext'),
    `subjectAltName=IP:${ip},DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n`,
  );
  openssl(dir, ['req', '-new', ...key, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=kube-apiserver']);
  openssl(dir, [
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'server.crt',
    '-days',
    '2',
    '-extfile',
    'server.ext',
  ]);
  return { caFile: join(dir, 'ca.crt'), certFile: join(dir, 'server.crt'), keyFile: join(dir, 'server.key') };
}
