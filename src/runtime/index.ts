/** The runtime's side of CNI: config discovery, plugin chains, the libcni-compatible result cache. */
export { type NetworkConfigList, type PluginConf, parseConfList, parsePluginConf } from './conf-list.js';
export { confFiles, listNetworks, loadNetwork } from './load-network.js';
export { findPlugin, splitPath } from './find-plugin.js';
export { execPlugin, pluginEnv, type PluginArgs } from './exec-plugin.js';
export { CniRuntime, pluginStdin, type CniRuntimeOptions, type GcAttachment, type RuntimeConf } from './cni-runtime.js';
export { attachNetworks, detachNetworks, type Pod, type PodNetwork } from './attach-networks.js';
export { CACHE_KIND, DEFAULT_CACHE_DIR, ResultCache, decodeCacheFile, encodeCacheFile, type CachedAttachment } from './result-cache.js';
export { type GoResult, ResultFormatError, parseResult, resultAddresses, resultAsVersion } from './go-result.js';
export { NETNS_DIR, createNetns, deleteNetns, execInNetns, netnsPath } from './netns.js';
export * from './errors.js';
