import { test } from 'node:test';
import assert from 'node:assert/strict';
import { controllerConfigFromFlags } from './controller-flags.js';

// The controller's configuration errors as the CLI words them (once src/controller/controller-config.test.ts).
test('controller flags: bad input rejected, naming flag and value', () => {
  const bad: [Parameters<typeof controllerConfigFromFlags>[0], RegExp][] = [
    [{}, /missing --cluster-cidr/],
    [{ clusterCidr: '10.0.0.0/33' }, /invalid --cluster-cidr "10.0.0.0\/33"/],
    [{ clusterCidr: '10.0.0.1/16' }, /invalid --cluster-cidr "10.0.0.1\/16".*host bits set/],
    [{ clusterCidr: '10.0.0.0/16,10.0.128.0/17' }, /10.0.128.0\/17 overlaps 10.0.0.0\/16/],
    [{ clusterCidr: '10.0.0.0/16,10.0.0.0/16' }, /10.0.0.0\/16 overlaps 10.0.0.0\/16/],
    [
      { clusterCidr: '10.0.0.0/16', nodeMaskSize: '8' },
      /invalid --node-mask-size 8: the node mask must be from the mask of --cluster-cidr 10.0.0.0\/16 \(16\) to 32/,
    ],
    [{ clusterCidr: '10.0.0.0/16', nodeMaskSize: '33' }, /invalid --node-mask-size 33/],
    [{ clusterCidr: '10.0.0.0/16', nodeMaskSize: '2x' }, /invalid --node-mask-size "2x": must be a prefix length/],
    [{ clusterCidr: '10.0.0.0/16,fd00::/64', nodeMaskSizeV6: '48' }, /invalid --node-mask-size-v6 48: .*fd00::\/64 \(64\)/],
    [{ clusterCidr: '10.0.0.0/16', nodeMaskSizeV6: '64' }, /invalid --node-mask-size-v6 64: --cluster-cidr has no IPv6 CIDR/],
    [{ clusterCidr: 'fd00::/48', nodeMaskSize: '64', nodeMaskSizeV6: '64' }, /give only --node-mask-size-v6/],
    [{ clusterCidr: '10.0.0.0/16', serviceCidr: '10.96.0.0' }, /invalid --service-cidr "10.96.0.0"/],
  ];
  for (const [flags, msg] of bad)
    assert.throws(
      () => controllerConfigFromFlags(flags),
      (e: unknown) => e instanceof TypeError && msg.test(e.message),
      JSON.stringify(flags),
    );
});
