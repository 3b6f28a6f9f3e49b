/**
 * The image `npm run image` builds (test/helpers/image.ts), imported into a real containerd with
 * `ctr images import` as a node operator would, then run with the image's own user (65532, as
 * serve and the controller run) on a read-only root: `podipam version` answers with Node.js 20,
 * the shim and the flock addon; every native addon and better-sqlite3 load (no library missing
 * from the Debian base); iptables runs; the SBOM is in the image; the root is mounted read-only.
 * The name after import is the one deploy/ asks for.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startContainerd, type Containerd } from '../helpers/containerd.js';
import { ensureImage, REPO_ROOT } from '../helpers/image.js';

function ctr(socket: string, args: readonly string[]): { code: number | null; out: string } {
  const r = spawnSync('/usr/bin/ctr', ['-a', socket, '-n', 'k8s.io', ...args], { encoding: 'utf8', timeout: 180_000 });
  return { code: r.status, out: `${r.stdout}${r.stderr}${r.error ? r.error.message : ''}` };
}

/** Every image deploy/base names for podipam's own containers. */
function deployImages(): string[] {
  const refs = new Set<string>();
  for (const f of ['daemonset.yaml', 'deployment.yaml']) {
    for (const m of readFileSync(join(REPO_ROOT, 'deploy/base', f), 'utf8').matchAll(/^\s*image:\s*(\S+)\s*$/gm)) refs.add(m[1] as string);
  }
  return [...refs];
}

test(
  'the built image runs under containerd as user 65532 on a read-only root: podipam version, every addon, better-sqlite3, iptables, the SBOM',
  { timeout: 1_200_000 },
  async () => {
    const image = await ensureImage();
    assert.deepEqual(
      deployImages().map((r) => `docker.io/${r}`),
      [image.ref],
      'deploy/base names the image the build makes',
    );
    let ctd: Containerd | undefined;
    // The script's output goes to a file in a bind-mounted directory, not through ctr's stdout:
    // `ctr run --rm` can return before it has copied the container's last lines (seen once: the
    // final line missing, exit 0).
    const outDir = mkdtempSync(join(tmpdir(), 'podipam-image-run-'));
    chmodSync(outDir, 0o777);
    try {
      ctd = await startContainerd({});
      const imported = ctr(ctd.socket, ['images', 'import', '--snapshotter', 'native', image.archive]);
      assert.equal(imported.code, 0, imported.out);
      const listed = ctr(ctd.socket, ['images', 'ls']).out;
      const row = listed.split('\n').find((l) => l.startsWith(`${image.ref} `));
      assert.ok(row, `ctr images ls has ${image.ref}:\n${listed}`);
      assert.ok(row.includes(image.digest), `imported under the built digest ${image.digest}: ${row}`);

      const script = [
        'exec >/out/log 2>&1',
        'set -e',
        'echo "uid=$(id -u) gid=$(id -g)"',
        'podipam version',
        `node -e "for (const a of ['flock','peercred','read_files','reserve_file','dir_watch','sched']) process.dlopen({ exports: {} }, '/opt/podipam/build/Release/' + a + '.node'); console.log('addons ok')"`,
        `cd /opt/podipam && node -e "const D = require('better-sqlite3'); console.log('sqlite', new D(':memory:').prepare('select sqlite_version() v').get().v)"`,
        'iptables --version',
        'ls /usr/share/podipam/sbom',
        `node -e "const r = require('fs').readFileSync('/proc/self/mounts', 'utf8').split('\\n').map((l) => l.split(' ')).find((f) => f[1] === '/'); console.log('root mounted ' + r[3].split(',')[0])"`,
      ].join('\n');
      const mount = `type=bind,src=${outDir},dst=/out,options=rbind:rw`;
      const name = `podipam-image-run-${process.pid}`;
      const run = ctr(ctd.socket, ['run', '--rm', '--snapshotter', 'native', '--read-only', '--mount', mount, image.ref, name, 'sh', '-c', script]);
      const log = join(outDir, 'log');
      const out = existsSync(log) ? readFileSync(log, 'utf8') : '';
      assert.equal(run.code, 0, `${run.out}${out}`);
      assert.match(out, /^uid=65532 gid=65532$/m, out);
      assert.match(out, /^podipam \d+\.\d+\.\d+/m, out);
      assert.match(out, /^Node\.js: v20\./m, out);
      assert.match(out, /^CNI shim: \/opt\/podipam\/dist\/bin\/podipam-cni$/m, out);
      assert.match(out, /^flock addon: \/opt\/podipam\/build\/Release\/flock\.node$/m, out);
      assert.match(out, /^addons ok$/m, out);
      assert.match(out, /^sqlite 3\./m, out);
      assert.match(out, /^iptables v1\.8\.\d+ \(nf_tables\)$/m, out);
      for (const f of ['debian-packages.txt', 'node.json', 'npm.spdx.json']) assert.match(out, new RegExp(`^${f.replace('.', '\\.')}$`, 'm'), out);
      assert.match(out, /^root mounted ro$/m, out);
    } finally {
      await ctd?.stop();
      rmSync(outDir, { recursive: true, force: true });
    }
  },
);
