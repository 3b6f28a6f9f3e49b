import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatImportReport, holderText, importOutputFormat } from './import-run.js';
import type { ImportOutcome, ImportPlan } from '../import/import-plan.js';

const plan: ImportPlan = {
  source: 'whereabouts',
  pools: [{ name: 'p4', cidr: '10.0.0.0/24', blockSize: 26, nodeSelector: 'all()', disabled: false, source: 'ippools x' }],
  blocks: [{ cidr: '10.0.0.0/26', pool: 'p4', affinity: null }],
  addresses: [
    {
      ip: '10.0.0.5',
      pool: 'p4',
      block: '10.0.0.0/26',
      holder: { kind: 'pod', handle: 'n:c1:eth0', namespace: 'ns', pod: 'web', containerId: 'c1', sourceHandle: 'c1' },
    },
    { ip: '10.0.0.1', pool: 'p4', block: '10.0.0.0/26', holder: { kind: 'node', handle: 'tunnel-a', node: 'node-a', sourceHandle: 'tunnel-a' } },
  ],
  conflicts: [],
};
const written: ImportOutcome = { conflicts: [], poolsCreated: ['p4'], blocksWritten: ['10.0.0.0/26'], adopted: 2, already: 0, skipped: 0, wroteNothing: false };

test('the dry run report is the real one but for the verbs', () => {
  const real = formatImportReport(plan, written, { dryRun: false, refused: false });
  const dry = formatImportReport(plan, { ...written, wroteNothing: true }, { dryRun: true, refused: false });
  assert.match(real, /^created pool\(s\): p4$/m);
  assert.match(real, /^wrote block\(s\): 10\.0\.0\.0\/26$/m);
  assert.match(real, /^adopted 2 address\(es\); 0 already held; 0 skipped for conflicts$/m);
  assert.match(real, /10\.0\.0\.1 +10\.0\.0\.0\/26 +node node-a +node-a +tunnel-a/);
  assert.equal(dry.replaceAll('would create', 'created').replaceAll('would write', 'wrote').replaceAll('would adopt', 'adopted'), real);
  assert.notEqual(dry, real);
});

test('a refused import lists its conflicts and says nothing was written', () => {
  const refused: ImportOutcome = {
    conflicts: [{ kind: 'address-held', subject: '10.0.0.5', detail: 'held by pod a/b' }],
    poolsCreated: [],
    blocksWritten: [],
    adopted: 0,
    already: 0,
    skipped: 2,
    wroteNothing: true,
  };
  const real = formatImportReport(plan, refused, { dryRun: false, refused: true });
  assert.match(real, /Conflicts \(1\)\nKIND +SUBJECT +DETAIL\naddress-held +10\.0\.0\.5 +held by pod a\/b\n/);
  assert.match(real, /^refused: 1 conflict\(s\); nothing written \(0 already held, 2 not written\)$/m);
  assert.match(formatImportReport(plan, refused, { dryRun: true, refused: true }), /^would refuse: 1 conflict\(s\); nothing would be written/m);
});

test('holders and -o', () => {
  assert.equal(holderText(plan.addresses[0]!.holder), 'pod ns/web');
  assert.equal(holderText({ kind: 'pod', handle: 'h', containerId: 'c9', sourceHandle: 'c9' }), 'container c9');
  assert.equal(importOutputFormat(undefined), 'table');
  assert.equal(importOutputFormat('json'), 'json');
  assert.throws(() => importOutputFormat('wide'), /invalid -o\/--output "wide": expected table or json/);
});
