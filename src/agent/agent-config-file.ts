/**
 * `podipam agent --config FILE`: a JSON object with the same options as the flags, keyed by the
 * flag's camelCase name (`--min-idle` → `minIdle`). Counts are JSON integers, durations strings
 * (`"30s"`), lists JSON arrays of strings, switches (`inCluster`) JSON booleans. Flags given on the command line win over the file;
 * the file wins over the environment and the defaults. This module checks the file's shape
 * (unknown keys, types) and hands back each value in the string form of its flag, so one
 * validation (src/cli/agent.ts) serves both; its errors name the key and the value.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';

/** How each key's value is written in the file. */
export const AGENT_CONFIG_KEYS = {
  socket: 'string',
  node: 'string',
  datastore: 'string',
  dataDir: 'string',
  metricsListen: 'string',
  allowUid: 'uids',
  pools: 'names',
  minIdle: 'count',
  maxIdle: 'count',
  capacity: 'count',
  cooldown: 'duration',
  stickyFor: 'duration',
  gcInterval: 'duration',
  viewInterval: 'duration',
  kubeconfig: 'string',
  inCluster: 'boolean',
  stickyNamespaces: 'names',
  stickyNamePattern: 'string',
  headroomInterval: 'duration',
  headroomClear: 'count',
  realtimePriority: 'count',
  masquerade: 'boolean',
  masqueradeInterval: 'duration',
  runtimeEndpoint: 'string',
  runtimeReconcileInterval: 'duration',
  runtimeReconcileGrace: 'duration',
  runtimeReconcileDataDir: 'string',
  warmUp: 'duration',
  optimize: 'string',
} as const;

export type AgentConfigKey = keyof typeof AGENT_CONFIG_KEYS;

/** Each value as its flag would give it: a string, (allowUid) a list of strings, (a switch such as inCluster) a boolean. */
export type AgentFileOptions = { -readonly [K in AgentConfigKey]?: K extends 'allowUid' ? string[] : K extends 'inCluster' | 'masquerade' ? boolean : string };

/** A config file the agent refuses; `key` undefined when the file as a whole is at fault. */
export class AgentConfigFileError extends Error {
  override readonly name = 'AgentConfigFileError';
  constructor(
    readonly file: string,
    readonly key: string | undefined,
    readonly value: unknown,
    requirement: string,
    options?: ErrorOptions,
  ) {
    super(
      key === undefined ? `config file ${file}: ${requirement}` : `config file ${file}: key ${JSON.stringify(key)} ${shown(value)}: ${requirement}`,
      options,
    );
  }
}

/** Largest config file read. */
const MAX_BYTES = 1 << 20;

function shown(v: unknown): string {
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 120 ? `${s.slice(0, 117)}...` : s;
}

/** Reads and checks FILE (AgentConfigFileError when unreadable, not JSON, or a key or value is wrong). */
export function readAgentConfigFile(file: string): AgentFileOptions {
  let text: string;
  try {
    const fd = openSync(file, 'r');
    try {
      const st = fstatSync(fd);
      if (!st.isFile()) throw new Error('not a regular file');
      if (st.size > MAX_BYTES) throw new Error(`${st.size} bytes: at most ${MAX_BYTES}`);
      const buf = Buffer.alloc(st.size);
      let n = 0;
      while (n < buf.length) {
        const r = readSync(fd, buf, n, buf.length - n, n);
        if (r === 0) break;
        n += r;
      }
      text = buf.subarray(0, n).toString('utf8');
    } finally {
      closeSync(fd);
    }
  } catch (e) {
    throw new AgentConfigFileError(file, undefined, undefined, `cannot read it: ${(e as Error).message}`, { cause: e });
  }
  return parseAgentConfig(text, file);
}

/** Checks a config file's text (pure; `file` names it in errors). */
export function parseAgentConfig(text: string, file: string): AgentFileOptions {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw new AgentConfigFileError(file, undefined, undefined, `not JSON: ${(e as Error).message}`, { cause: e });
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc))
    throw new AgentConfigFileError(file, undefined, undefined, 'must be a JSON object of options');
  const out: AgentFileOptions = {};
  const known = Object.keys(AGENT_CONFIG_KEYS);
  for (const [key, value] of Object.entries(doc)) {
    if (!Object.hasOwn(AGENT_CONFIG_KEYS, key)) throw new AgentConfigFileError(file, key, value, `unknown key (known: ${known.join(', ')})`);
    const k = key as AgentConfigKey;
    const bad = (why: string): never => {
      throw new AgentConfigFileError(file, key, value, why);
    };
    switch (AGENT_CONFIG_KEYS[k]) {
      case 'string':
        if (typeof value !== 'string' || value === '') bad('must be a non-empty string');
        (out as Record<string, string>)[k] = value as string;
        break;
      case 'duration':
        if (typeof value !== 'string') bad('must be a duration string such as "500ms", "30s", "15m" or "1h"');
        (out as Record<string, string>)[k] = value as string;
        break;
      case 'count':
        if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) bad('must be a non-negative integer');
        (out as Record<string, string>)[k] = String(value);
        break;
      case 'names':
        if (!Array.isArray(value) || !value.every((v) => typeof v === 'string' && v !== '' && !v.includes(',')))
          bad('must be a list of non-empty strings without commas');
        if ((value as string[]).length === 0) bad('must not be empty (leave the key out instead)');
        (out as Record<string, string>)[k] = (value as string[]).join(',');
        break;
      case 'boolean':
        if (typeof value !== 'boolean') bad('must be true or false');
        (out as Record<string, boolean>)[k] = value as boolean;
        break;
      case 'uids':
        if (
          !Array.isArray(value) ||
          !value.every((v) => (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) || (typeof v === 'string' && /^[0-9]{1,10}$/.test(v)))
        ) {
          bad('must be a list of numeric uids');
        }
        out.allowUid = (value as (number | string)[]).map(String);
        break;
    }
  }
  return out;
}
