/**
 * The podipam image for tests: `npm run image`'s builder (scripts/image/build-image.mjs) run
 * with `--if-changed` into .image/ (a rebuild only when its inputs moved), giving the OCI
 * archive `ctr images import` takes, the image reference and its manifest digest. A missing
 * builder prerequisite (mmdebstrap, umoci, a built dist/) fails with the builder's reason.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from './plugin.js';

export interface BuiltImage {
  readonly archive: string;
  readonly ref: string;
  readonly digest: string;
}

let built: BuiltImage | undefined;

export function ensureImage(): BuiltImage {
  if (built) return built;
  const r = spawnSync(process.execPath, [join(REPO_ROOT, 'scripts', 'image', 'build-image.mjs'), '--if-changed'], { cwd: REPO_ROOT, encoding: 'utf8', timeout: 900_000, maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`missing test prerequisite: the podipam image could not be built (npm run image): exit ${r.status ?? r.signal}: ${(r.error?.message ?? '') + r.stderr.slice(-3000)}`);
  const s = JSON.parse(r.stdout) as { archive: string; ref: string; digest: string };
  built = { archive: s.archive, ref: s.ref, digest: s.digest };
  return built;
}
