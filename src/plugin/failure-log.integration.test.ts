import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { makeTempDir } from '../../test/helpers/tmp.js';
import { appendFailure } from './failure-log.js';

const BIN = new URL('../../../bin/podipam', import.meta.url).pathname;

test('appendFailure: one JSON line per failure, in the directory it creates', () => {
  const d = makeTempDir('cnilog');
  try {
    const file = join(d.path, 'podipam', 'cni.log');
    assert.equal(appendFailure(fs, { PODIPAM_CNI_LOG: file }, { command: 'ADD', containerId: 'c1', code: 7, msg: 'bad' }), file);
    appendFailure(fs, { PODIPAM_CNI_LOG: file }, { command: 'DEL', code: 11, msg: 'again' });
    const lines = fs
      .readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.deepEqual(
      lines.map((l) => [l.level, l.component, l.command, l.code, l.msg]),
      [
        ['error', 'cni', 'ADD', 7, 'bad'],
        ['error', 'cni', 'DEL', 11, 'again'],
      ],
    );
    assert.match(lines[0].time, /Z$/);
  } finally {
    d.remove();
  }
});

test('appendFailure keeps the log bounded: past the limit the file rolls to .1', () => {
  const d = makeTempDir('cnilog-roll');
  try {
    const file = join(d.path, 'cni.log');
    for (let i = 0; i < 200; i++) appendFailure(fs, { PODIPAM_CNI_LOG: file }, { code: 7, msg: `failure ${i} ${'x'.repeat(50)}` }, 4096);
    assert.ok(fs.statSync(file).size <= 4096, `cni.log is ${fs.statSync(file).size} bytes`);
    assert.ok(fs.statSync(`${file}.1`).size <= 4096);
    assert.match(fs.readFileSync(file, 'utf8'), /failure 199 /);
  } finally {
    d.remove();
  }
});

test('appendFailure never throws when the log cannot be written', () => {
  assert.equal(appendFailure(fs, { PODIPAM_CNI_LOG: '/dev/null/podipam/cni.log' }, { code: 7, msg: 'x' }), undefined);
  // Node's recursive mkdir never returns on such a path: the log must not try it.
  assert.equal(appendFailure(fs, { PODIPAM_CNI_LOG: '/proc/podipam-no/dir/cni.log' }, { code: 7, msg: 'x' }), undefined);
});

test('the plugin appends the error it answers to $PODIPAM_CNI_LOG', () => {
  const d = makeTempDir('cnilog-plugin');
  try {
    const file = join(d.path, 'cni.log');
    const r = spawnSync(BIN, [], {
      env: {
        PATH: process.env.PATH,
        CNI_COMMAND: 'ADD',
        CNI_CONTAINERID: 'ctr-log-1',
        CNI_IFNAME: 'eth0',
        CNI_NETNS: '/var/run/netns/x',
        CNI_PATH: '/usr/lib/cni',
        PODIPAM_CNI_LOG: file,
      },
      input: '{"cniVersion":"1.0.0","name":"n","type":"bridge","ipam":{"type":"podipam"}}',
      encoding: 'utf8',
    });
    assert.equal(r.status, 1, r.stdout + r.stderr);
    const answered = JSON.parse(r.stdout);
    const logged = JSON.parse(fs.readFileSync(file, 'utf8').trim());
    assert.deepEqual([logged.command, logged.containerId, logged.code, logged.msg], ['ADD', 'ctr-log-1', answered.code, answered.msg]);
  } finally {
    d.remove();
  }
});
