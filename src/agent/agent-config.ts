/**
 * The node agent's own options, checked once at the edge, in the agent's own field names: the
 * CLI (src/cli/agent.ts) passes `name`, which maps a field to its flag or to its key in the
 * `--config` file. The warm pool's options are checked by the warm pool's own validator.
 */
import { DNS_SUBDOMAIN, DNS_SUBDOMAIN_HINT, defaultNodeName } from '../model/node-name.js';

/** The options as given (text). */
export interface AgentConfigInput {
  /** Node name for calls whose config and environment name none (default: the host name). */
  readonly node?: string;
  /** Uids served besides root and the agent's own. */
  readonly allowUids: readonly string[];
  /** A datastore URL to open at start (cluster mode; the warm pool's datastore). */
  readonly datastore?: string;
}

export interface AgentConfig {
  readonly node: string;
  readonly allowUids: readonly number[];
  readonly datastore?: string;
}

export type AgentField = keyof AgentConfigInput;

/** An option the agent refuses: `field` names it, the message names it as `name` did. */
export class AgentConfigError extends Error {
  override readonly name = 'AgentConfigError';
  constructor(
    readonly field: AgentField,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** The checked options; AgentConfigError for the first option refused. */
export async function agentConfig(o: AgentConfigInput, name: (field: AgentField) => string = (f) => f): Promise<AgentConfig> {
  const allowUids = o.allowUids.map((u) => {
    if (!/^[0-9]{1,10}$/.test(u)) throw new AgentConfigError('allowUids', `invalid ${name('allowUids')} ${JSON.stringify(u)}: expected a numeric uid`);
    return Number(u);
  });
  // A node name given here must be one (the warm pool and cluster mode write it into the
  // datastore); the host name's default is left to the calls, which may name their own node.
  if (o.node !== undefined && !DNS_SUBDOMAIN.test(o.node)) {
    throw new AgentConfigError('node', `invalid ${name('node')} ${JSON.stringify(o.node)}: a node name must be ${DNS_SUBDOMAIN_HINT}`);
  }
  if (o.datastore !== undefined) {
    const { parseStoreUrl } = await import('../store/parse-store-url.js');
    try {
      parseStoreUrl(o.datastore);
    } catch (e) {
      throw new AgentConfigError('datastore', `invalid ${name('datastore')} ${JSON.stringify(o.datastore)}: ${(e as Error).message}`, { cause: e });
    }
  }
  return { node: o.node ?? defaultNodeName(), allowUids, ...(o.datastore !== undefined ? { datastore: o.datastore } : {}) };
}
