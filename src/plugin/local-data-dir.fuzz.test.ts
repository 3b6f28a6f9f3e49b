/**
 * Fuzzing of the files the local back end reads from its data directory: reservation files
 * (named by address, `id\r\nifname` inside), `last_reserved_ip.N`, the temporary file, odd
 * names, with random bytes in them (and now and then a symbolic link), as an older writer, a
 * crash or an operator may leave them. Then ADD, ADD, CHECK, DEL, GC through pluginCall on
 * that directory: every answer is a result or a classified CNI error JSON (no crash, no hang,
 * no stack trace); an ADD never hands out an address whose file was already there for another
 * attachment, and writes its own file; a DEL never removes a file that is not its own. Seeds
 * printed; see test/helpers/fuzz.ts to replay.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pluginCall } from './plugin-call.js';
import { anyBytes, anyText, bounded, checkCniAnswer, fc, fuzz } from '../../test/helpers/fuzz.js';
import { makeTempDir, type TempDir } from '../../test/helpers/tmp.js';

const FILE = 'data-dir.fuzz';
let tmp: TempDir;
let n = 0;
before(() => {
  tmp = makeTempDir('local-fuzz');
});
after(() => tmp?.remove());

const ADDRS = ['10.1.0.10', '10.1.0.11', '10.1.0.12', '10.1.0.13', 'fd00:1::2', 'fd00:1::3', 'fd00:1::4'];
const name = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.constantFrom(
      ...ADDRS,
      'last_reserved_ip.0',
      'last_reserved_ip.1',
      '.podipam-reserve.tmp',
      '10.1.0.010',
      '::ffff:10.1.0.11',
      'FD00:1::3',
      '10.1.0.14 ',
    ),
  },
  {
    weight: 1,
    arbitrary: anyText(30).filter(
      (s) => s !== '' && s !== '.' && s !== '..' && s !== 'lock' && !s.includes('/') && !s.includes('\0') && Buffer.byteLength(s) < 200,
    ),
  },
);
const content = fc.oneof(
  fc.constantFrom(
    'c1\r\neth0',
    'c2\r\neth0',
    'c1',
    'other\r\neth0',
    'c1\r\neth1',
    ' c1 \r\neth0\n',
    '',
    '10.1.0.12',
    'fd00:1::3',
    '10.1.0.250',
    '300.1.1.1',
    '\r\n',
  ),
  anyText(40),
  anyBytes(64).map((b) => b.toString('latin1')),
);
const planted = fc.array(fc.record({ name, content, link: fc.integer({ min: 0, max: 9 }).map((x) => x === 0) }), { maxLength: 8 });

const conf = (dataDir: string, keep: string[] = []) =>
  JSON.stringify({
    cniVersion: '1.1.0',
    name: 'net',
    type: 'bridge',
    ipam: { type: 'podipam', dataDir, ranges: [[{ subnet: '10.1.0.0/28', rangeStart: '10.1.0.10', rangeEnd: '10.1.0.14' }], [{ subnet: 'fd00:1::/125' }]] },
    'cni.dev/valid-attachments': keep.map((id) => ({ containerID: id, ifname: 'eth0' })),
  });

const envOf = (verb: string, id: string): NodeJS.ProcessEnv => ({
  CNI_COMMAND: verb,
  CNI_CONTAINERID: id,
  CNI_IFNAME: 'eth0',
  CNI_NETNS: '/var/run/netns/x',
  CNI_PATH: '/opt/cni/bin',
});

function ipsOf(out: string): string[] {
  return ((JSON.parse(out) as { ips: { address: string }[] }).ips ?? []).map((i) => i.address.split('/')[0]!);
}

const outcomes = new Map<string, number>();
test(
  'fuzz the local data directory: planted files with random content never crash a verb or get an address handed out twice',
  { timeout: 180_000 },
  async (t) => {
    await fuzz(t, { runs: 300, file: FILE }, planted, async (files) => {
      const dataDir = join(tmp.path, `d${++n}`);
      const dir = join(dataDir, 'net');
      mkdirSync(dir, { recursive: true });
      const before = new Map<string, string>();
      for (const f of files) {
        const p = join(dir, f.name);
        if (existsSync(p)) continue;
        if (f.link) symlinkSync('/etc/hostname', p);
        else {
          writeFileSync(p, f.content, 'latin1');
          before.set(f.name, readFileSync(p, 'utf8'));
        }
      }
      const call = async (verb: string, id: string, keep?: string[]) => {
        const a = await bounded(
          `${verb} ${id}`,
          15_000,
          pluginCall(envOf(verb, id), () => conf(dataDir, keep)),
        );
        const err = checkCniAnswer(a, verb);
        const k = `${verb}:${err?.code ?? 'ok'}`;
        outcomes.set(k, (outcomes.get(k) ?? 0) + 1);
        return a;
      };
      for (const id of ['c1', 'c2']) {
        const a = await call('ADD', id);
        if (a.status !== 0) continue;
        for (const ip of ipsOf(a.output)) {
          const had = before.get(ip);
          assert.ok(had === undefined || had.trim() === `${id}\r\neth0`, `ADD ${id} got ${ip}, whose file held ${JSON.stringify(had)}`);
          assert.equal(readFileSync(join(dir, ip), 'utf8'), `${id}\r\neth0`, `the reservation file of ${ip}`);
        }
      }
      await call('CHECK', 'c1');
      await call('DEL', 'c2');
      for (const [f, text] of before) {
        const t2 = text.trim();
        if (t2 === 'c2\r\neth0' || t2 === 'c2' || f.startsWith('last_reserved_ip.') || f === '.podipam-reserve.tmp') continue;
        assert.ok(existsSync(join(dir, f)), `DEL c2 left ${JSON.stringify(f)} (${JSON.stringify(text)}) alone`);
      }
      await call('GC', 'c1', ['c1']);
    });
    const line = [...outcomes]
      .sort()
      .map(([k, v]) => `${k}=${v}`)
      .join(' ');
    t.diagnostic(`outcomes: ${line}`);
    console.log(`local data dir fuzz outcomes: ${line}`);
    assert.ok(
      (outcomes.get('ADD:ok') ?? 0) > 0 && [...outcomes.keys()].some((k) => k.startsWith('ADD:') && k !== 'ADD:ok'),
      'some ADDs succeeded and some were refused',
    );
  },
);
