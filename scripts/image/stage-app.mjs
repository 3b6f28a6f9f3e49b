// The image's podipam tree, staged in a directory as it will lie in the image:
//   /opt/podipam/{package.json, bin/, dist/ (without tests, bench, test helpers), build/Release/*.node}
//   /opt/podipam/node_modules: the production packages of package-lock.json (no dev ones),
//     copied from this checkout's node_modules (their native parts were built for this Node.js),
//     without type declarations, source maps, sources of native parts or READMEs
//   /opt/podipam/dist/bin/podipam-cni: the shim compiled for /opt/podipam (its fallback path)
//   /usr/local/bin/podipam -> /opt/podipam/bin/podipam
// dist/build-info.json keeps the commit; its builtAt becomes SOURCE_DATE_EPOCH.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { basename, join, relative } from 'node:path';

export const PREFIX = '/opt/podipam';

/** Files of dist/ that do not ship: tests, benchmarks and what only tests load. */
const DIST_SKIP = [/^dist\/test(\/|$)/, /^dist\/bench(\/|$)/, /\.test\.js$/, /^dist\/build-info\.json$/];
/** Files of node_modules that nothing loads at run time. Licences stay. */
const MODULE_SKIP = [/\.d\.[cm]?ts$/, /\.[cm]?ts$/, /\.map$/, /(^|\/)(README|CHANGELOG|HISTORY)(\.[a-z]+)?$/i, /\.markdown$/i];

/** The lockfile's production packages ("node_modules/…" paths): neither dev nor dev-optional. */
export function productionPackages(root) {
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'));
  return Object.entries(lock.packages ?? {})
    .filter(([path, p]) => path.startsWith('node_modules/') && !p.dev && !p.devOptional)
    .map(([path, p]) => ({ path, optional: Boolean(p.optional), version: p.version }))
    .sort((a, b) => (a.path < b.path ? -1 : 1));
}

/** Stages the tree under `stage`; returns the shim's and the tree's facts for the report. */
export function stageApp({ root, stage, epoch }) {
  const opt = join(stage, PREFIX.slice(1));
  mkdirSync(opt, { recursive: true });
  cpSync(join(root, 'package.json'), join(opt, 'package.json'));
  cpSync(join(root, 'bin'), join(opt, 'bin'), { recursive: true });
  cpSync(join(root, 'dist'), join(opt, 'dist'), {
    recursive: true,
    filter: (src) => !DIST_SKIP.some((re) => re.test(relative(root, src))),
  });
  const info = JSON.parse(readFileSync(join(root, 'dist/build-info.json'), 'utf8'));
  writeFileSync(
    join(opt, 'dist/build-info.json'),
    `${JSON.stringify({ commit: info.commit, dirty: info.dirty, builtAt: new Date(epoch * 1000).toISOString() })}\n`,
  );
  // The shim names its fallback (bin/podipam) by absolute path: compiled for the image's prefix.
  rmSync(join(opt, 'dist/bin/podipam-cni'), { force: true });
  execFileSync(process.execPath, [join(root, 'scripts/build-shim.mjs')], {
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...process.env, PODIPAM_SHIM_PREFIX: PREFIX, PODIPAM_SHIM_OUT: join(opt, 'dist/bin/podipam-cni') },
  });
  const addons = readdirSync(join(root, 'build/Release'))
    .filter((f) => f.endsWith('.node'))
    .sort();
  if (addons.length === 0) throw new Error(`no native addons in ${join(root, 'build/Release')}: run npm install (node-gyp) first`);
  mkdirSync(join(opt, 'build/Release'), { recursive: true });
  for (const a of addons) cpSync(join(root, 'build/Release', a), join(opt, 'build/Release', a));
  const packages = productionPackages(root);
  for (const p of packages) {
    const from = join(root, p.path);
    if (!existsSync(from)) {
      if (p.optional) continue;
      throw new Error(`production package ${p.path} is missing from node_modules: run npm ci first`);
    }
    const native = existsSync(join(from, 'binding.gyp'));
    cpSync(from, join(opt, p.path), {
      recursive: true,
      filter: (src) => {
        const rel = relative(from, src);
        // A nested node_modules holds packages of its own, copied by their own lockfile entry.
        if (rel === 'node_modules' || rel.startsWith('node_modules/')) return false;
        if (native && keepNative(rel) === false) return false;
        return !(statSync(src).isFile() && MODULE_SKIP.some((re) => re.test(rel)));
      },
    });
  }
  mkdirSync(join(stage, 'usr/local/bin'), { recursive: true });
  symlinkSync(`${PREFIX}/bin/podipam`, join(stage, 'usr/local/bin/podipam'));
  return { addons, packages: packages.length };
}

/** In a package with a native part: its sources and build leftovers go, build/Release/*.node stays. */
function keepNative(rel) {
  if (rel === 'deps' || rel.startsWith('deps/') || rel === 'src' || rel.startsWith('src/')) return false;
  if (rel === 'build' || rel === 'build/Release') return true;
  if (rel.startsWith('build/')) return /^build\/Release\/[^/]+\.node$/.test(rel) && basename(rel) !== 'test_extension.node';
  return undefined;
}
