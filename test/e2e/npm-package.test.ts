/**
 * The npm package as a user gets it: `npm pack` of this tree, installed with `npm install -g`
 * into a scratch prefix (from the npm cache, which holds every dependency: --prefer-offline),
 * its native parts built by the package's own install script. Then the installed `podipam`
 * answers `version`, `serve` answers /healthz, and `install-cni --dry-run` plans an install.
 * better-sqlite3's install (prebuild-install, else a compile from source of about two minutes)
 * gets its prebuilt binary as a user's does, only from a local directory instead of GitHub
 * (unreachable here): a prebuild tarball of this checkout's own build of the same version, found
 * through prebuild-install's npm_config_better_sqlite3_local_prebuilds. prebuild-install loads
 * the unpacked binary before it accepts it, and `serve` below opens SQLite with it. One install
 * serves every check.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';

const VERSION = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;

function npm(args: readonly string[], cwd: string, timeoutMs: number, env: Record<string, string> = {}) {
  // --ignore-scripts on pack only: the tree is built already, and a prepack build would rewrite
  // dist/ under the tests running beside this one.
  const r = spawnSync('npm', args, {
    cwd,
    encoding: 'utf8',
    timeout: timeoutMs,
    env: { ...process.env, npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false', ...env },
  });
  assert.equal(r.status, 0, `npm ${args.join(' ')}: ${r.error?.message ?? ''}\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

/**
 * Writes into `dir` the prebuild tarball prebuild-install looks for
 * (better-sqlite3-v<version>-node-v<abi>-<platform>-<arch>.tar.gz, holding
 * build/Release/better_sqlite3.node) from this checkout's installed better-sqlite3; its version.
 */
function localSqlitePrebuild(dir: string): string {
  const pkg = join(REPO_ROOT, 'node_modules', 'better-sqlite3');
  const version = (JSON.parse(readFileSync(join(pkg, 'package.json'), 'utf8')) as { version: string }).version;
  assert.ok(existsSync(join(pkg, 'build', 'Release', 'better_sqlite3.node')), `no ${pkg}/build/Release/better_sqlite3.node (npm ci first)`);
  mkdirSync(dir, { recursive: true });
  const name = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  const r = spawnSync('tar', ['-czf', join(dir, name), '-C', pkg, 'build/Release/better_sqlite3.node'], { encoding: 'utf8' });
  assert.equal(r.status, 0, `tar: ${r.stderr}`);
  return version;
}

test(
  'npm pack → npm install -g into a scratch prefix → a working podipam (version, serve /healthz, install-cni --dry-run)',
  { timeout: 900_000 },
  async (t) => {
    const scratch = makeTempDir('npm-package');
    try {
      const packed = JSON.parse(npm(['pack', '--ignore-scripts', '--json', '--pack-destination', scratch.path], REPO_ROOT, 120_000)) as {
        filename: string;
        files: { path: string }[];
      }[];
      const files = packed[0]!.files.map((f) => f.path);
      t.diagnostic(`tarball ${packed[0]!.filename}: ${files.length} files`);
      for (const must of [
        'bin/podipam',
        'dist/src/main.js',
        'dist/bundle/plugin/run-plugin.js',
        'dist/src/cli/install-cni.js',
        'dist/build-info.json',
        'dist/src/server/dashboard/index.html',
        'dist/src/server/dashboard/manifest.json',
        'binding.gyp',
        'native/flock.c',
        'deploy/kustomization.yaml',
        'package.json',
      ]) {
        assert.ok(files.includes(must), `tarball lacks ${must}`);
      }
      for (const f of files) assert.ok(!/\.test\.js$|^src\/|^test\/|^dist\/(test|bench)\/|^build\/|^node_modules\//.test(f), `tarball ships ${f}`);

      const prefix = join(scratch.path, 'prefix');
      const sqliteVersion = localSqlitePrebuild(join(scratch.path, 'prebuilds'));
      const t0 = performance.now();
      npm(
        [
          'install',
          '-g',
          '--prefix',
          prefix,
          '--prefer-offline',
          '--no-audit',
          '--no-fund',
          '--foreground-scripts=false',
          '--allow-scripts=podipam,better-sqlite3',
          join(scratch.path, packed[0]!.filename),
        ],
        scratch.path,
        840_000,
        { npm_config_better_sqlite3_local_prebuilds: join(scratch.path, 'prebuilds') },
      );
      t.diagnostic(`npm install -g took ${((performance.now() - t0) / 1000).toFixed(0)} s`);
      const root = join(prefix, 'lib', 'node_modules', 'podipam');
      const bin = join(prefix, 'bin', 'podipam');
      // Only runtime dependencies were installed.
      const deps = readdirSync(join(root, 'node_modules'));
      // package-lock.json marks what only development needs ("dev": true): none of it is installed.
      const lock = JSON.parse(readFileSync(join(REPO_ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean }> };
      const devOnly = Object.entries(lock.packages)
        .filter(([k, p]) => p.dev === true && /^node_modules\/(@[^/]+\/)?[^/]+$/.test(k))
        .map(([k]) => k.slice('node_modules/'.length));
      assert.ok(devOnly.includes('typescript') && devOnly.includes('kubernetes-models'));
      for (const dev of devOnly) assert.ok(!existsSync(join(root, 'node_modules', dev)), `installed dev-only package ${dev}`);
      for (const dep of ['pino', 'better-sqlite3', 'commander']) assert.ok(deps.includes(dep), `missing ${dep}`);
      const installedSqlite = (JSON.parse(readFileSync(join(root, 'node_modules', 'better-sqlite3', 'package.json'), 'utf8')) as { version: string }).version;
      t.diagnostic(
        `better-sqlite3 ${installedSqlite}: ${installedSqlite === sqliteVersion ? 'the local prebuild' : `no prebuild of it (this checkout has ${sqliteVersion}): compiled`}`,
      );
      assert.ok(existsSync(join(root, 'node_modules', 'better-sqlite3', 'build', 'Release', 'better_sqlite3.node')), 'better-sqlite3 has its binary');
      assert.ok(existsSync(join(root, 'build', 'Release', 'flock.node')), 'the install script built the flock addon');

      const version = spawnSync(bin, ['version', '--json'], { encoding: 'utf8', timeout: 20_000 });
      assert.equal(version.status, 0, version.stderr);
      const v = JSON.parse(version.stdout);
      assert.equal(v.version, VERSION);
      assert.match(v.commit, /^([0-9a-f]{40}(-dirty)?|unknown)$/);
      assert.equal(v.flockAddon, join(root, 'build', 'Release', 'flock.node'));
      assert.ok(v.shim, 'the CNI shim is in the installed package');
      assert.equal(spawnSync(bin, ['--version'], { encoding: 'utf8' }).stdout.split('\n')[0], `podipam ${VERSION}`);

      // serve from the installed package, on a free port, with its own data dir.
      const serve = spawn(bin, ['serve', '--listen', '127.0.0.1:0', '--data-dir', join(scratch.path, 'data'), '--gc-interval', '0'], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      try {
        let out = '';
        let err = '';
        serve.stderr.on('data', (d: Buffer) => (err += d.toString()));
        const url = await new Promise<string>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`serve did not start in 30 s: ${out} ${err}`)), 30_000);
          serve.stdout.on('data', (d: Buffer) => {
            out += d.toString();
            const m = /dashboard and API on (http:\/\/[^/\s]+)\//.exec(out);
            if (m) {
              clearTimeout(timer);
              resolve(m[1]!);
            }
          });
          serve.on('exit', (c) => reject(new Error(`serve exited ${c}: ${out} ${err}`)));
        });
        const res = await fetch(`${url}/healthz`);
        assert.equal(res.status, 200);
        assert.equal(((await res.json()) as { status: string }).status, 'ok');
        // The dashboard from the installed package: the page and the bundled assets it names.
        const page = await fetch(`${url}/`);
        assert.equal(page.status, 200);
        const html = await page.text();
        const assets = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1]!);
        assert.equal(assets.length, 2, html);
        for (const a of assets) {
          assert.ok(files.includes(`dist/src/server/dashboard${a.slice('/assets'.length)}`), `tarball lacks the asset ${a}`);
          assert.equal((await fetch(url + a)).status, 200, a);
        }
      } finally {
        serve.kill('SIGTERM');
        await new Promise((r) => (serve.exitCode !== null ? r(null) : serve.on('exit', r)));
      }

      const dry = spawnSync(
        bin,
        ['install-cni', '--dry-run', '--bin-dir', join(scratch.path, 'opt/cni/bin'), '--conf-dir', join(scratch.path, 'etc/cni/net.d')],
        { encoding: 'utf8', timeout: 20_000 },
      );
      assert.equal(dry.status, 0, dry.stdout + dry.stderr);
      assert.match(dry.stdout, /would write .*opt\/cni\/bin\/podipam/);
      assert.match(dry.stdout, /would write .*etc\/cni\/net\.d\/10-podipam\.conflist/);
      assert.equal(existsSync(join(scratch.path, 'opt')), false, 'a dry run writes nothing');
    } finally {
      scratch.remove();
    }
  },
);
