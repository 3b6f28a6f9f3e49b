import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AgentConfigFileError, parseAgentConfig, readAgentConfigFile } from './agent-config-file.js';

describe('agent config file', () => {
  it('gives every value in its flag string form', () => {
    const o = parseAgentConfig(
      JSON.stringify({
        minIdle: 4,
        maxIdle: 8,
        capacity: 64,
        cooldown: '2s',
        stickyFor: '10m',
        gcInterval: '1m',
        pools: ['a', 'b'],
        stickyNamespaces: ['db'],
        stickyNamePattern: 'pg-[0-9]+',
        kubeconfig: '/k',
        inCluster: false,
        masquerade: false,
        masqueradeInterval: '1m',
        allowUid: [1000, '1001'],
        datastore: 'sqlite:/x',
      }),
      'f.json',
    );
    assert.deepEqual(o, {
      minIdle: '4',
      maxIdle: '8',
      capacity: '64',
      cooldown: '2s',
      stickyFor: '10m',
      gcInterval: '1m',
      pools: 'a,b',
      stickyNamespaces: 'db',
      stickyNamePattern: 'pg-[0-9]+',
      kubeconfig: '/k',
      inCluster: false,
      masquerade: false,
      masqueradeInterval: '1m',
      allowUid: ['1000', '1001'],
      datastore: 'sqlite:/x',
    });
  });

  const refused: [unknown, string, RegExp][] = [
    [{ minIdel: 4 }, 'minIdel', /unknown key/],
    [{ minIdle: -1 }, 'minIdle', /-1: must be a non-negative integer/],
    [{ minIdle: '4' }, 'minIdle', /"4": must be a non-negative integer/],
    [{ capacity: 1.5 }, 'capacity', /1\.5: must be a non-negative integer/],
    [{ cooldown: 30 }, 'cooldown', /30: must be a duration string/],
    [{ pools: 'a,b' }, 'pools', /"a,b": must be a list/],
    [{ pools: ['a,b'] }, 'pools', /without commas/],
    [{ stickyNamespaces: [] }, 'stickyNamespaces', /must not be empty/],
    [{ allowUid: ['root'] }, 'allowUid', /numeric uids/],
    [{ kubeconfig: '' }, 'kubeconfig', /non-empty string/],
    [{ inCluster: 'true' }, 'inCluster', /"true": must be true or false/],
    [{ masquerade: 'off' }, 'masquerade', /"off": must be true or false/],
  ];
  for (const [doc, key, why] of refused) {
    it(`refuses ${JSON.stringify(doc)} naming the key ${key} and the value`, () => {
      assert.throws(
        () => parseAgentConfig(JSON.stringify(doc), '/etc/podipam/agent.json'),
        (e: unknown) => {
          assert.ok(e instanceof AgentConfigFileError);
          assert.equal(e.key, key);
          assert.match(e.message, new RegExp(`^config file /etc/podipam/agent\\.json: key "${key}" `));
          assert.match(e.message, why);
          return true;
        },
      );
    });
  }

  it('refuses a file that is not a JSON object', () => {
    assert.throws(() => parseAgentConfig('[1]', 'f'), /config file f: must be a JSON object/);
    assert.throws(() => parseAgentConfig('{minIdle: 1}', 'f'), /config file f: not JSON/);
  });

  it('reads a file; a missing one is refused with its path', () => {
    const dir = mkdtempSync(join(tmpdir(), 'podipam-agent-conf-'));
    try {
      const f = join(dir, 'agent.json');
      writeFileSync(f, '{"minIdle": 2}');
      assert.deepEqual(readAgentConfigFile(f), { minIdle: '2' });
      assert.throws(() => readAgentConfigFile(join(dir, 'nope.json')), /config file .*nope\.json: cannot read it/);
      assert.throws(() => readAgentConfigFile(dir), /not a regular file/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
