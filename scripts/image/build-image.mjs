#!/usr/bin/env node
// npm run image: builds the OCI image docker.io/podipam/podipam:<version> (the name deploy/
// uses) without a daemon or a registry, reproducibly: the same commit and the same Debian mirror
// content give the same manifest digest. Layers, bottom up:
//   1. Debian bookworm, variant essential + iptables + libstdc++6 (mmdebstrap; debian-base.mjs)
//   2. /usr/local/bin/node: the Node.js binary this build runs on (Debian's nodejs is 18)
//   3. /opt/podipam (dist/, bin/, the shim, the addons, production node_modules; stage-app.mjs)
//      and the SBOM in /usr/share/podipam/sbom (sbom.mjs)
// Output in --out (default .image/): podipam-<version>.oci/ (OCI layout), podipam-<version>.oci.tar
// (its archive: `ctr -n k8s.io images import`, `skopeo copy oci-archive:…`), sbom/, image.json.
// SOURCE_DATE_EPOCH (the time of layers 2 and 3 and of the image) defaults to the commit's time;
// the base's is the Debian release's date (debian-base.mjs). Run `npm run build` first (npm run image does).
//
// Options: --out DIR; --base-cache CACHE (where the Debian base is cached: default DIR/cache; a
// base is named by the mirror's release, the mmdebstrap command and debian-base.mjs, so checkouts
// may share one); --fresh-base (rebuild the Debian base even if one made from the mirror's
// current release with the same command is cached); --if-changed (do nothing when DIR/image.json
// was built from the same inputs: dist/, bin/, the addons, the lockfile, the shim's source, these
// scripts, Node.js).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { buildBase, mmdebstrapArgs, NONROOT } from './debian-base.mjs';
import { gzipLayer, tarTree } from './layer-tar.mjs';
import { writeArchive, writeLayout } from './oci-image.mjs';
import { nodeFacts, writeSbom } from './sbom.mjs';
import { PREFIX, stageApp } from './stage-app.mjs';
import { staticCc } from '../shim-cc.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const { values: opts } = parseArgs({
  options: { out: { type: 'string' }, 'base-cache': { type: 'string' }, 'fresh-base': { type: 'boolean' }, 'if-changed': { type: 'boolean' } },
});
const out = resolve(opts.out ?? join(root, '.image'));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const tag = pkg.version;
const ref = `docker.io/podipam/podipam:${tag}`;
const name = `podipam-${tag}`;
const started = Date.now();
const step = (what) => console.error(`image: ${what} (${((Date.now() - started) / 1000).toFixed(1)} s)`);

function sourceDateEpoch() {
  const env = process.env.SOURCE_DATE_EPOCH;
  if (env !== undefined && env !== '') {
    if (!/^\d+$/.test(env)) throw new Error(`SOURCE_DATE_EPOCH must be a number of seconds: current value is ${JSON.stringify(env)}`);
    return Number(env);
  }
  try {
    return Number(execFileSync('git', ['log', '-1', '--format=%ct'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
  } catch (e) {
    throw new Error('SOURCE_DATE_EPOCH is unset and this is not a git checkout: set it (seconds since 1970)', { cause: e });
  }
}

/** sha256 over every input the image is made from (path and content), in a fixed order. */
function inputsHash(epoch, node) {
  const h = createHash('sha256');
  const add = (abs) => {
    const st = statSync(abs);
    if (st.isDirectory()) {
      for (const e of readdirSync(abs).sort()) add(join(abs, e));
    } else {
      h.update(`${relative(root, abs)}\0${st.mode & 0o111 ? 'x' : '-'}\0`);
      // builtAt changes with every build and is not in the image (it gets SOURCE_DATE_EPOCH).
      h.update(abs.endsWith('dist/build-info.json') ? JSON.stringify({ ...JSON.parse(readFileSync(abs, 'utf8')), builtAt: 0 }) : readFileSync(abs));
    }
  };
  // The shim's compiler too: with musl-gcc installed or not, the same sources make another shim.
  h.update(JSON.stringify({ epoch, node: node.sha256, mmdebstrap: mmdebstrapArgs('OUT', 'LIST'), shimCc: staticCc() }));
  for (const p of [
    'package.json',
    'package-lock.json',
    'bin',
    'dist/src',
    'dist/bundle',
    'dist/build-info.json',
    'native/shim',
    'scripts/build-shim.mjs',
    'scripts/shim-cc.mjs',
    'scripts/image',
  ])
    add(join(root, p));
  for (const a of readdirSync(join(root, 'build/Release'))
    .filter((f) => f.endsWith('.node'))
    .sort())
    add(join(root, 'build/Release', a));
  return h.digest('hex');
}

const epoch = sourceDateEpoch();
const node = nodeFacts(process.execPath);
if (!/^v20\./.test(node.version)) throw new Error(`the image takes the Node.js this build runs on, which must be 20.x: current value is ${node.version}`);
if (!existsSync(join(root, 'dist/build-info.json'))) throw new Error(`${join(root, 'dist')} is not built: run npm run build first`);
const inputs = inputsHash(epoch, node);
const summaryPath = join(out, 'image.json');
if (opts['if-changed'] && existsSync(summaryPath)) {
  const prev = JSON.parse(readFileSync(summaryPath, 'utf8'));
  if (prev.inputs === inputs && existsSync(prev.archive)) {
    console.log(JSON.stringify(prev, null, 2));
    process.exit(0);
  }
}

const work = join(out, 'work');
rmSync(work, { recursive: true, force: true });
mkdirSync(work, { recursive: true });
const layout = join(work, 'layout');
const blobs = join(layout, 'blobs', 'sha256');
mkdirSync(blobs, { recursive: true });

step('Debian base (mmdebstrap)');
const base = await buildBase({ workDir: work, cacheDir: opts['fresh-base'] ? undefined : resolve(opts['base-cache'] ?? join(out, 'cache')) });
step(`Debian base ${base.cached ? 'reused from the cache' : 'built'} (release of ${new Date(base.release.epoch * 1000).toISOString()})`);

const nodeStage = join(work, 'node');
mkdirSync(join(nodeStage, 'usr/local/bin'), { recursive: true });
copyFileSync(process.execPath, join(nodeStage, 'usr/local/bin/node'));
chmodSync(join(nodeStage, 'usr/local/bin/node'), 0o755);

const appStage = join(work, 'app');
const app = stageApp({ root, stage: appStage, epoch });
const sbomDir = join(appStage, 'usr/share/podipam/sbom');
const sbom = writeSbom({ root, dir: sbomDir, epoch, debianList: base.list, node });
step('podipam tree staged');

const layers = [];
const tars = [
  {
    tar: base.tar,
    createdBy: `mmdebstrap ${mmdebstrapArgs('base.tar', 'debian-packages.txt')
      .filter((a) => !a.startsWith('--customize-hook'))
      .join(' ')} (+ user ${NONROOT.uid})`,
  },
  { tree: nodeStage, createdBy: `Node.js ${node.version} (sha256 ${node.sha256}) at /usr/local/bin/node` },
  {
    tree: appStage,
    createdBy: `podipam ${tag} (commit ${JSON.parse(readFileSync(join(root, 'dist/build-info.json'), 'utf8')).commit}) at ${PREFIX}, SBOM at /usr/share/podipam/sbom`,
  },
];
for (const [i, t] of tars.entries()) {
  const tar = t.tar ?? join(work, `layer-${i}.tar`);
  if (t.tree) tarTree(t.tree, tar, epoch);
  const gz = join(work, `layer-${i}.tar.gz`);
  const l = await gzipLayer(tar, gz);
  renameSync(gz, join(blobs, l.digest.slice('sha256:'.length)));
  layers.push({ ...l, createdBy: t.createdBy });
}
step('layers written');

const commit = JSON.parse(readFileSync(join(root, 'dist/build-info.json'), 'utf8'));
const created = new Date(epoch * 1000).toISOString();
const labels = {
  'org.opencontainers.image.title': 'podipam',
  'org.opencontainers.image.description': pkg.description,
  'org.opencontainers.image.version': tag,
  'org.opencontainers.image.revision': `${commit.commit}${commit.dirty ? '-dirty' : ''}`,
  'org.opencontainers.image.created': created,
  'org.opencontainers.image.licenses': pkg.license,
};
const written = writeLayout({
  layout,
  layers,
  epoch,
  ref,
  tag,
  annotations: labels,
  config: {
    // serve and the controller run as this user (deploy/base/deployment.yaml); the DaemonSet's
    // containers set runAsUser: 0 (they write host directories owned by root).
    User: `${NONROOT.uid}:${NONROOT.uid}`,
    Env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'],
    Entrypoint: ['podipam'],
    Cmd: ['serve', '--listen', '0.0.0.0:7420'],
    WorkingDir: PREFIX,
    Labels: labels,
  },
});
const layoutDir = join(out, `${name}.oci`);
const archive = join(out, `${name}.oci.tar`);
rmSync(layoutDir, { recursive: true, force: true });
renameSync(layout, layoutDir);
writeArchive(layoutDir, archive, epoch);
rmSync(join(out, 'sbom'), { recursive: true, force: true });
cpSync(sbomDir, join(out, 'sbom'), { recursive: true });
rmSync(work, { recursive: true, force: true });
step('layout and archive written');

const summary = {
  ref,
  digest: written.manifest.digest,
  archive,
  layout: layoutDir,
  sourceDateEpoch: epoch,
  revision: labels['org.opencontainers.image.revision'],
  size: {
    compressed: layers.reduce((s, l) => s + l.size, 0) + written.config.size + written.manifest.size,
    unpacked: layers.reduce((s, l) => s + l.tarSize, 0),
    archive: statSync(archive).size,
  },
  layers: layers.map((l) => ({ digest: l.digest, size: l.size, unpacked: l.tarSize, createdBy: l.createdBy })),
  sbom: { ...sbom, dir: join(out, 'sbom'), inImage: '/usr/share/podipam/sbom' },
  addons: app.addons,
  baseCached: base.cached,
  baseRelease: { url: base.release.url, sha256: base.release.sha256, date: new Date(base.release.epoch * 1000).toISOString() },
  buildSeconds: Math.round((Date.now() - started) / 100) / 10,
  inputs,
};
writeFileSync(summaryPath, `${JSON.stringify(summary, null, 2)}\n`);
const mb = (n) => `${(n / 1e6).toFixed(1)} MB`;
console.error(
  [
    `image: ${ref}`,
    `  digest   ${summary.digest}`,
    `  size     ${mb(summary.size.compressed)} compressed, ${mb(summary.size.unpacked)} unpacked`,
    ...layers.map((l, i) => `  layer ${i + 1}  ${mb(l.size)} / ${mb(l.tarSize)}  ${l.createdBy.slice(0, 90)}`),
    `  SBOM     ${sbom.debianPackages} Debian packages, ${sbom.npmPackages} npm packages, Node.js ${sbom.node}`,
    `  archive  ${archive}`,
    `  layout   ${layoutDir}`,
    `  load     ctr -n k8s.io images import ${archive}`,
    `  push     skopeo copy oci-archive:${archive} docker://<registry>/podipam/podipam:${tag}`,
    `  built in ${summary.buildSeconds} s${base.cached ? ' (Debian base from the cache)' : ''}`,
  ].join('\n'),
);
console.log(JSON.stringify(summary, null, 2));
