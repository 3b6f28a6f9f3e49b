// Deterministic layer tarballs: GNU tar with names sorted, owners 0:0 (numeric), every mtime
// set to SOURCE_DATE_EPOCH, modes without group/other write, no atime/ctime, and gzip without a
// name or time (Node's zlib writes neither). The same tree gives the same bytes wherever it lies.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, readdirSync, statSync } from 'node:fs';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';

/**
 * zlib's default level: on this image's layers level 9 takes 2.6 times its CPU (8.6 s against
 * 3.3 s for the Node.js binary) for blobs 0.4 % smaller. Part of what the digest depends on.
 */
export const GZIP_LEVEL = 6;

/** GNU tar's flags for a byte-reproducible archive: sorted names, owner 0, one mtime, normalised modes. */
export function reproducibleTarFlags(epoch) {
  return ['--create', '--format=gnu', '--sort=name', '--numeric-owner', '--owner=0', '--group=0', `--mtime=@${epoch}`, '--mode=u+rwX,go+rX,go-w'];
}

/** Tars the tree under `dir` (entries relative to it, no leading "./") into `out`. */
export function tarTree(dir, out, epoch) {
  const top = readdirSync(dir).sort();
  execFileSync('tar', [...reproducibleTarFlags(epoch), '--hard-dereference', '-C', dir, '-f', out, '--', ...top], {
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...process.env, LC_ALL: 'C' },
  });
}

/**
 * Compresses the tar `tarPath` into `gzPath` and returns the layer's descriptor facts:
 * diffId (sha256 of the tar), digest and size of the compressed blob, and the tar's size.
 */
export async function gzipLayer(tarPath, gzPath) {
  const diff = createHash('sha256');
  const blob = createHash('sha256');
  let size = 0;
  const tap = (hash, count) =>
    new Transform({
      transform(chunk, _enc, done) {
        hash.update(chunk);
        if (count) size += chunk.length;
        done(null, chunk);
      },
    });
  await pipeline(createReadStream(tarPath), tap(diff, false), createGzip({ level: GZIP_LEVEL }), tap(blob, true), createWriteStream(gzPath));
  return { diffId: `sha256:${diff.digest('hex')}`, digest: `sha256:${blob.digest('hex')}`, size, tarSize: statSync(tarPath).size };
}
