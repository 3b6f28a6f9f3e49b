import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatPrefix } from '../ip/index.js';
import { ControllerConfigError, parseControllerConfig } from './controller-config.js';

test('controller config: defaults 24/64, families in --cluster-cidr order, several CIDRs per family', () => {
  const c = parseControllerConfig({ clusterCidrs: 'fd00::/48, 10.0.0.0/16,10.1.0.0/16', serviceCidrs: '10.0.0.0/24' });
  assert.deepEqual(c.clusterCidrs.map(formatPrefix), ['fd00::/48', '10.0.0.0/16', '10.1.0.0/16']);
  assert.deepEqual(c.nodeMaskSize, { 4: 24, 6: 64 });
  assert.deepEqual(c.serviceCidrs.map(formatPrefix), ['10.0.0.0/24']);
  assert.deepEqual(parseControllerConfig({ clusterCidrs: 'fd00::/48', nodeMaskSize: '56' }).nodeMaskSize, { 6: 56 });
  assert.deepEqual(parseControllerConfig({ clusterCidrs: '10.0.0.0/8,fd00::/32', nodeMaskSize: '26', nodeMaskSizeV6: '64' }).nodeMaskSize, { 4: 26, 6: 64 });
});

test("controller config errors name the settings' fields and the value", () => {
  const bad: [Parameters<typeof parseControllerConfig>[0], string, RegExp][] = [
    [{}, 'clusterCidrs', /^missing clusterCidrs: /],
    [{ clusterCidrs: '10.0.0.0/33' }, 'clusterCidrs', /^invalid clusterCidrs "10.0.0.0\/33"/],
    [
      { clusterCidrs: '10.0.0.0/16', nodeMaskSize: '8' },
      'nodeMaskSize',
      /^invalid nodeMaskSize 8: the node mask must be from the mask of clusterCidrs 10.0.0.0\/16 \(16\) to 32/,
    ],
    [{ clusterCidrs: '10.0.0.0/16', nodeMaskSizeV6: '64' }, 'nodeMaskSizeV6', /^invalid nodeMaskSizeV6 64: clusterCidrs has no IPv6 CIDR/],
    [{ clusterCidrs: '10.0.0.0/16', serviceCidrs: '10.96.0.0' }, 'serviceCidrs', /^invalid serviceCidrs "10.96.0.0"/],
  ];
  for (const [settings, field, msg] of bad) {
    assert.throws(
      () => parseControllerConfig(settings),
      (e: unknown) => e instanceof ControllerConfigError && e.field === field && msg.test(e.message),
      JSON.stringify(settings),
    );
  }
});
