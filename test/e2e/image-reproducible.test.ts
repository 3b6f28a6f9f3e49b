/**
 * Two builds of the image from the same commit give the same manifest digest.
 * What is rebuilt: one image is ensureImage()'s (.image/, built for the current inputs — in a
 * fresh checkout by this run or by deploy-containerd's); the other is built first, from scratch
 * into a temp dir: mmdebstrap runs again (--fresh-base, no cache), the Node.js and podipam
 * layers are staged, tarred and compressed again, the shim is compiled again, the SBOM
 * regenerated. Both use the same dist/
 * (rebuilding it would double the cost; dist/build-info.json's time is replaced by
 * SOURCE_DATE_EPOCH in the image). When the two differ only because the Debian mirror published
 * an update between them, a third build is made at once and compared with the second.
 * skopeo (a second reader of OCI archives) must see the same manifest and the image's user.
 * Costs one full build (~2–4 min here).
 * A later commit (another SOURCE_DATE_EPOCH) reuses the cached base: the same base layer, no
 * mmdebstrap run; only the Node.js and podipam layers are made again.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildImage, type BuiltImage, ensureImage, IMAGE_BASE_CACHE } from '../helpers/image.js';
import { requireExecutable } from '../helpers/prereq.js';
import { makeTempDir } from '../helpers/tmp.js';

const debianList = (i: BuiltImage): string => readFileSync(join(i.sbom.dir, 'debian-packages.txt'), 'utf8');

/** Where two builds part: the blobs that differ and, for a layer, the first differing tar entries. */
function difference(a: BuiltImage, b: BuiltImage): string {
  const lines: string[] = [`digests ${a.digest} != ${b.digest}`];
  a.layers.forEach((la, i) => {
    const lb = b.layers[i];
    if (lb === undefined || la.digest === lb.digest) return;
    const list = (img: BuiltImage, d: string): string[] =>
      execFileSync('tar', ['--full-time', '-tvzf', join(img.layout, 'blobs/sha256', d.slice(7))], { encoding: 'utf8', maxBuffer: 256 << 20 }).split('\n');
    const ta = list(a, la.digest);
    const tb = list(b, lb.digest);
    const only = (x: string[], y: string[]): string[] => {
      const s = new Set(y);
      return x.filter((l) => !s.has(l)).slice(0, 8);
    };
    lines.push(`layer ${i + 1} (${la.createdBy.slice(0, 60)}) differs:`, ...only(ta, tb).map((l) => `  - ${l}`), ...only(tb, ta).map((l) => `  + ${l}`));
  });
  return lines.join('\n');
}

test('two builds of the image from the same commit give the same manifest digest; skopeo reads the archive', { timeout: 1_800_000 }, async () => {
  requireExecutable('/usr/bin/skopeo');
  const tmp = makeTempDir('image');
  try {
    // The build from scratch first: meanwhile another file may hold .image/'s lock building the
    // shared image, which this file would otherwise wait for doing nothing.
    let b = await buildImage(join(tmp.path, 'b'), ['--fresh-base']);
    let a = await ensureImage();
    if (a.digest !== b.digest && debianList(a) !== debianList(b)) {
      // The mirror moved between the builds (a security update): compare two builds made now.
      a = b;
      b = await buildImage(join(tmp.path, 'c'), ['--fresh-base']);
    }
    assert.equal(b.digest, a.digest, difference(a, b));
    assert.equal(b.baseCached, false, 'the build from scratch made its own Debian base');

    const raw = execFileSync('/usr/bin/skopeo', ['inspect', '--raw', `oci-archive:${b.archive}`], { encoding: 'buffer' });
    assert.equal(`sha256:${createHash('sha256').update(raw).digest('hex')}`, b.digest, 'skopeo reads the same manifest');
    const config = JSON.parse(
      execFileSync('/usr/bin/skopeo', ['inspect', '--config', `oci:${b.layout}:${b.ref.split(':').pop() ?? ''}`], { encoding: 'utf8' }),
    ) as {
      config: { User?: string; Entrypoint?: string[] };
      created: string;
    };
    assert.equal(config.config.User, '65532:65532');
    assert.deepEqual(config.config.Entrypoint, ['podipam']);
    const epoch = Number(execFileSync('git', ['log', '-1', '--format=%ct'], { encoding: 'utf8' }).trim());
    assert.equal(Date.parse(config.created), epoch * 1000, `created (${config.created}) is the commit time`);
  } finally {
    tmp.remove();
  }
});

test('a later commit reuses the cached Debian base: the same base layer, no mmdebstrap run', { timeout: 900_000 }, async () => {
  const first = await ensureImage();
  const tmp = makeTempDir('image-later');
  try {
    const out = join(tmp.path, 'later');
    cpSync(IMAGE_BASE_CACHE, join(out, 'cache'), { recursive: true });
    const later = (hours: number): Promise<BuiltImage> => buildImage(out, [], false, { SOURCE_DATE_EPOCH: String(first.sourceDateEpoch + hours * 3600) });
    let a = first;
    let b = await later(1);
    if (b.baseRelease.sha256 !== a.baseRelease?.sha256) {
      // The mirror published a release since .image/ was built: b made (and cached) its base.
      a = b;
      b = await later(2);
    }
    assert.equal(b.baseCached, true, `the base of release ${b.baseRelease.date} was cached, yet built again`);
    assert.equal(b.layers[0]?.digest, a.layers[0]?.digest, 'the base layer does not depend on the commit time');
    assert.notEqual(b.digest, a.digest, 'the image carries the later time');
  } finally {
    tmp.remove();
  }
});
