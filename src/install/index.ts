export { installCni, conflistPath, BINARY_NAME, type InstallOptions } from './install-cni.js';
export { uninstallCni, type UninstallOptions } from './uninstall-cni.js';
export {
  buildConflist,
  conflistText,
  defaultInterface,
  interfaceRefusal,
  BACKENDS,
  INTERFACES,
  DEFAULT_AGENT_SOCKET,
  type Backend,
  type InterfacePlugin,
  type ConflistOptions,
} from './cni-conflist.js';
export { ForeignFileError } from './foreign-file-error.js';
export { InstallRecordError } from './install-record-error.js';
export { stepLine, type InstallStep } from './install-step.js';
export { findShim, SHIM_CANDIDATES } from './find-shim.js';
