/** The server's public surface: `podipam serve` as a library (bench/, tests, the CLI). */
export { startServer, type RunningServer, type ServerConfig } from './start-server.js';
export { DEFAULT_CLUSTER_CIDRS, DEFAULT_POOLS, type DefaultPool } from './default-pools.js';
export { cniConflist, type CniConfigInput } from './cni-config.js';
export { loadTokens, checkListenTokens, isLoopbackHost, type Tokens } from './auth.js';
export { API_INDEX } from './routes-static.js';
export { summarize, type ClusterSummary } from './cluster-summary.js';
