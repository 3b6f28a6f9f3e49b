/**
 * A test node's network namespace: `ip netns` NAME with loopback up and a veth to this machine
 * (a /30 from 10.253.0.0/16 chosen at random: the machine side `hostSide`, the node's address
 * `nodeIP`), so host-network pods on it listen on their fixed ports without meeting anything
 * else on the machine, and reach what the test serves on `hostSide`. remove() deletes it.
 */
import { randomBytes } from 'node:crypto';
import { sh } from './netns.js';

export interface NodeNetns {
  readonly name: string;
  readonly hostSide: string;
  readonly nodeIP: string;
  remove(): void;
}

export function makeNodeNetns(tag: string): NodeNetns {
  const name = `pdnode-${tag}`;
  const [a, b] = [...randomBytes(2)];
  const base = `10.253.${a}.${(b! & 0x3f) * 4}`;
  const [o1, o2, o3, o4] = base.split('.').map(Number) as [number, number, number, number];
  const hostSide = `${o1}.${o2}.${o3}.${o4 + 1}`;
  const nodeIP = `${o1}.${o2}.${o3}.${o4 + 2}`;
  const hostIf = `pdh${tag}`.slice(0, 15);
  const nodeIf = `pdn${tag}`.slice(0, 15);
  const steps: [string, string[]][] = [
    ['ip', ['netns', 'add', name]],
    ['ip', ['-n', name, 'link', 'set', 'lo', 'up']],
    ['ip', ['link', 'add', hostIf, 'type', 'veth', 'peer', 'name', nodeIf, 'netns', name]],
    ['ip', ['addr', 'add', `${hostSide}/30`, 'dev', hostIf]],
    ['ip', ['link', 'set', hostIf, 'up']],
    ['ip', ['-n', name, 'addr', 'add', `${nodeIP}/30`, 'dev', nodeIf]],
    ['ip', ['-n', name, 'link', 'set', nodeIf, 'up']],
    ['ip', ['-n', name, 'route', 'add', 'default', 'via', hostSide]],
  ];
  const remove = (): void => {
    sh('ip', ['link', 'del', hostIf]);
    sh('ip', ['netns', 'del', name]);
  };
  for (const [cmd, args] of steps) {
    const r = sh(cmd, args);
    if (!r.ok) {
      remove();
      throw new Error(`${cmd} ${args.join(' ')}: ${r.out}`);
    }
  }
  return { name, hostSide, nodeIP, remove };
}
