// Writes an OCI image layout (oci-layout, index.json, blobs/sha256/…) and its archive, with
// nothing in them but content: the config's times are SOURCE_DATE_EPOCH, JSON is written with
// a fixed key order, and the archive is a sorted tar with fixed owners and mtimes.
// The index names the image twice: io.containerd.image.name (the full reference, which
// `ctr images import` takes) and org.opencontainers.image.ref.name (the tag, as the OCI layout
// spec means it: `skopeo copy oci-archive:<archive>:0.1.0 …`).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { reproducibleTarFlags } from './layer-tar.mjs';

const MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
const CONFIG = 'application/vnd.oci.image.config.v1+json';
const LAYER = 'application/vnd.oci.image.layer.v1.tar+gzip';

function writeBlob(blobs, bytes) {
  const hex = createHash('sha256').update(bytes).digest('hex');
  writeFileSync(join(blobs, hex), bytes);
  return { digest: `sha256:${hex}`, size: bytes.length };
}

/**
 * Writes the layout into `layout` (its blobs dir already holds the layers, named by digest) and
 * returns the manifest's descriptor. `layers`: [{ digest, size, diffId, createdBy }].
 */
export function writeLayout({ layout, layers, epoch, ref, tag, config, annotations }) {
  const blobs = join(layout, 'blobs', 'sha256');
  mkdirSync(blobs, { recursive: true });
  const created = new Date(epoch * 1000).toISOString();
  const cfg = writeBlob(
    blobs,
    Buffer.from(
      JSON.stringify({
        created,
        architecture: process.arch === 'arm64' ? 'arm64' : 'amd64',
        os: 'linux',
        config,
        rootfs: { type: 'layers', diff_ids: layers.map((l) => l.diffId) },
        history: layers.map((l) => ({ created, created_by: l.createdBy })),
      }),
    ),
  );
  const manifest = writeBlob(
    blobs,
    Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: MANIFEST,
        config: { mediaType: CONFIG, ...cfg },
        layers: layers.map((l) => ({ mediaType: LAYER, digest: l.digest, size: l.size })),
        annotations,
      }),
    ),
  );
  writeFileSync(join(layout, 'oci-layout'), `${JSON.stringify({ imageLayoutVersion: '1.0.0' })}\n`);
  writeFileSync(
    join(layout, 'index.json'),
    `${JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.index.v1+json',
      manifests: [{ mediaType: MANIFEST, ...manifest, annotations: { 'io.containerd.image.name': ref, 'org.opencontainers.image.ref.name': tag } }],
    })}\n`,
  );
  return { manifest, config: cfg };
}

/** The layout `layout` as one tar (what `ctr images import` and `skopeo … oci-archive:` read). */
export function writeArchive(layout, archive, epoch) {
  const part = `${archive}.part`;
  execFileSync('tar', [...reproducibleTarFlags(epoch), '-C', layout, '-f', part, 'blobs', 'index.json', 'oci-layout'], {
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...process.env, LC_ALL: 'C' },
  });
  renameSync(part, archive);
}
