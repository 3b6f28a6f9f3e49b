/**
 * The certificate and key of `podipam serve --tls-cert FILE --tls-key FILE` (HTTPS), checked
 * before anything is opened: the key file must be private like the token files (no group or
 * other permission bits, see secret-file.ts), the certificate must be PEM X.509 and the key
 * must be the certificate's. Every message names the file at fault, never the key's content.
 */
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import type { ServerTls } from './http-server.js';
import { readSecretFile } from './secret-file.js';

/** Reads and checks the pair; throws an Error naming the flag and the file. */
export function loadServerTls(certFile: string, keyFile: string): ServerTls {
  let cert: string;
  try {
    cert = readFileSync(certFile, 'utf8');
  } catch (e) {
    throw new Error(`cannot read --tls-cert ${certFile}: ${(e as Error).message}`, { cause: e });
  }
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(cert);
  } catch (e) {
    throw new Error(`--tls-cert ${certFile} is not a PEM X.509 certificate: ${(e as Error).message}`, { cause: e });
  }
  const key = readSecretFile('--tls-key', keyFile);
  let matches: boolean;
  try {
    matches = x509.checkPrivateKey(createPrivateKey(key));
  } catch (e) {
    throw new Error(`--tls-key ${keyFile} is not a PEM private key: ${(e as Error).message}`, { cause: e });
  }
  if (!matches) throw new Error(`--tls-key ${keyFile} is not the key of --tls-cert ${certFile} (subject ${x509.subject.replace(/\n/g, ', ')})`);
  try {
    createSecureContext({ cert, key });
  } catch (e) {
    throw new Error(`--tls-cert ${certFile} and --tls-key ${keyFile} cannot be used for TLS: ${(e as Error).message}`, { cause: e });
  }
  return { cert, key };
}
