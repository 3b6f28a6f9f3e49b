import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CniError } from './errors.js';
import { readCmdEnv, validateContainerId, validateInterfaceName, validateNetworkName } from './skel-env.js';

function cniErr(code: number, msg: string, details?: string) {
  return (e: unknown) => {
    assert.ok(e instanceof CniError, String(e));
    assert.equal(e.code, code);
    assert.equal(e.msg, msg);
    if (details !== undefined) assert.equal(e.details, details);
    return true;
  };
}

test('readCmdEnv names every missing variable in skel order', () => {
  assert.throws(
    () => readCmdEnv({ CNI_COMMAND: 'ADD', CNI_CONTAINERID: 'c1', CNI_PATH: '/p' }),
    cniErr(4, 'required env variables [CNI_NETNS,CNI_IFNAME] missing'),
  );
  assert.throws(
    () => readCmdEnv({ CNI_COMMAND: 'ADD', CNI_CONTAINERID: '', CNI_NETNS: '/n', CNI_IFNAME: 'e', CNI_PATH: '/p' }),
    cniErr(4, 'required env variables [CNI_CONTAINERID] missing'),
  );
  assert.throws(() => readCmdEnv({}), cniErr(4, 'required env variables [CNI_COMMAND] missing'));
  assert.throws(() => readCmdEnv({ CNI_COMMAND: 'DEL' }), cniErr(4, 'required env variables [CNI_CONTAINERID,CNI_IFNAME,CNI_PATH] missing'));
  assert.throws(() => readCmdEnv({ CNI_COMMAND: 'STATUS' }), cniErr(4, 'required env variables [CNI_PATH] missing'));
  assert.throws(() => readCmdEnv({ CNI_COMMAND: 'GC' }), cniErr(4, 'required env variables [CNI_PATH] missing'));
});

test('readCmdEnv: DEL does not need CNI_NETNS, VERSION needs only the command', () => {
  assert.equal(readCmdEnv({ CNI_COMMAND: 'DEL', CNI_CONTAINERID: 'c', CNI_IFNAME: 'eth0', CNI_PATH: '/p' }).netns, '');
  assert.equal(readCmdEnv({ CNI_COMMAND: 'VERSION' }).command, 'VERSION');
  const e = readCmdEnv({ CNI_COMMAND: 'ADD', CNI_CONTAINERID: 'c', CNI_NETNS: '/n', CNI_IFNAME: 'eth0', CNI_PATH: '/p', CNI_ARGS: 'IP=1.2.3.4' });
  assert.deepEqual(e, { command: 'ADD', containerId: 'c', netns: '/n', ifname: 'eth0', args: 'IP=1.2.3.4', path: '/p' });
});

test('validateContainerId: empty is code 3, bad characters code 4 with the id in details', () => {
  assert.throws(() => validateContainerId(''), cniErr(3, 'missing containerID'));
  assert.throws(() => validateContainerId(' sp '), cniErr(4, 'invalid characters in containerID', ' sp '));
  assert.throws(() => validateContainerId('-x'), cniErr(4, 'invalid characters in containerID', '-x'));
  assert.throws(() => validateContainerId('a/b'), cniErr(4, 'invalid characters in containerID', 'a/b'));
  validateContainerId('0123abcDEF_.-x');
});

test('validateNetworkName refuses path tricks: ., .., slashes', () => {
  for (const bad of ['.', '..', 'bad/name', '../x', 'a b', '-a']) {
    assert.throws(() => validateNetworkName(bad), cniErr(7, 'invalid characters found in network name', bad));
  }
  assert.throws(() => validateNetworkName(''), cniErr(7, 'missing network name'));
  validateNetworkName('net-1.a_b');
});

test('validateInterfaceName follows the kernel rules', () => {
  assert.throws(() => validateInterfaceName(''), cniErr(4, 'interface name is empty'));
  assert.throws(() => validateInterfaceName('0123456789abcdef'), cniErr(4, 'interface name is too long'));
  assert.throws(() => validateInterfaceName('..'), cniErr(4, 'interface name is . or ..'));
  for (const bad of ['eth0/x', 'eth:0', 'eth 0', 'eth\t0']) {
    assert.throws(() => validateInterfaceName(bad), cniErr(4, 'interface name contains / or : or whitespace characters'));
  }
  validateInterfaceName('0123456789abcde');
  validateInterfaceName('eth0.100');
});
