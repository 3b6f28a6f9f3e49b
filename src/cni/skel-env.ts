import { CNI_NAME } from '../model/cni-name.js';
import { interfaceNameProblem } from '../model/interface-name.js';
import { CniCode, CniError } from './errors.js';

/** The plugin's environment, after the checks the Go `skel` makes. */
export interface CmdEnv {
  readonly command: string;
  readonly containerId: string;
  readonly netns: string;
  readonly ifname: string;
  readonly args: string;
  readonly path: string;
}

const REQUIRED: Readonly<Record<string, readonly string[]>> = {
  CNI_COMMAND: ['ADD', 'CHECK', 'DEL', 'GC', 'STATUS'],
  CNI_CONTAINERID: ['ADD', 'CHECK', 'DEL'],
  CNI_NETNS: ['ADD', 'CHECK'],
  CNI_IFNAME: ['ADD', 'CHECK', 'DEL'],
  CNI_ARGS: [],
  CNI_PATH: ['ADD', 'CHECK', 'DEL', 'GC', 'STATUS'],
};

/**
 * Reads the CNI_* variables and reports the missing ones in one error, as the Go skel does:
 * code 4 `required env variables [CNI_NETNS,CNI_IFNAME] missing` (order of the table above;
 * an empty value counts as missing). CNI_COMMAND itself is always required.
 */
export function readCmdEnv(env: NodeJS.ProcessEnv): CmdEnv {
  const command = env.CNI_COMMAND ?? '';
  const missing: string[] = [];
  for (const [name, verbs] of Object.entries(REQUIRED)) {
    if ((env[name] ?? '') === '' && (name === 'CNI_COMMAND' || verbs.includes(command))) missing.push(name);
  }
  if (missing.length > 0) {
    throw new CniError(CniCode.InvalidEnv, `required env variables [${missing.join(',')}] missing`);
  }
  return {
    command,
    containerId: env.CNI_CONTAINERID ?? '',
    netns: env.CNI_NETNS ?? '',
    ifname: env.CNI_IFNAME ?? '',
    args: env.CNI_ARGS ?? '',
    path: env.CNI_PATH ?? '',
  };
}

/** The character class of container ids and network names (libcni `cniValidNameChars`). */
const VALID_NAME = CNI_NAME;

/** Go's `utils.ValidateContainerID`: code 3 when empty, code 4 (id in details) when malformed. */
export function validateContainerId(id: string): void {
  if (id === '') throw new CniError(CniCode.UnknownContainer, 'missing containerID');
  if (!VALID_NAME.test(id)) throw new CniError(CniCode.InvalidEnv, 'invalid characters in containerID', id);
}

/** Go's `utils.ValidateNetworkName`: code 7. */
export function validateNetworkName(name: string): void {
  if (name === '') throw new CniError(CniCode.InvalidConfig, 'missing network name');
  if (!VALID_NAME.test(name)) throw new CniError(CniCode.InvalidConfig, 'invalid characters found in network name', name);
}

/**
 * Go's `utils.ValidateInterfaceName` (the kernel's dev_valid_name): non-empty, at most 15
 * bytes, not "." or "..", no "/", ":" or whitespace. Code 4.
 */
export function validateInterfaceName(ifname: string): void {
  switch (interfaceNameProblem(ifname)) {
    case undefined:
      return;
    case 'empty':
      throw new CniError(CniCode.InvalidEnv, 'interface name is empty');
    case 'too-long':
      throw new CniError(CniCode.InvalidEnv, 'interface name is too long', 'interface name should be less than 16 characters');
    case 'dot':
      throw new CniError(CniCode.InvalidEnv, 'interface name is . or ..');
    case 'bad-character':
      throw new CniError(CniCode.InvalidEnv, 'interface name contains / or : or whitespace characters');
  }
}
