/**
 * The verbs, as a Go plugin built on `skel` runs them: the checks in libcni's order (env, stdin
 * config, container id, ifname, version), then the back end chosen from `ipam`. I/O-free apart
 * from what the back end does: `run-plugin.ts` reads stdin and prints.
 */
import { CniCode, CniError } from '../cni/errors.js';
// Re-exported for run-plugin.ts, which then has one module to load instead of two.
export { CniCode, CniError };
import type { BackendHost, BackendKind, IpamRequest } from './ipam-backend.js';
import { goField, isObject } from '../cni/go-decode.js';
import { ipamKeys } from './ipam-keys.js';
import { podArgsProblem, podRefOfArgs } from '../model/pod-ref.js';
import { quoteText } from '../util/quote-text.js';
import { runtimePodAnnotations } from './runtime-pod-annotations.js';
import { readCmdEnv, validateContainerId, validateInterfaceName } from '../cni/skel-env.js';
import { CURRENT_VERSION, SUPPORTED_VERSIONS, isSupportedVersion, versionAnswer, versionAtLeast } from '../cni/version.js';

/**
 * Executes one verb; returns what goes to stdout (empty for DEL/CHECK/GC/STATUS). Throws
 * CniError (or anything, converted by `cniErrorOf`, src/cni/cni-error-of.ts). `host`: long-lived services when the
 * node agent runs the call (see BackendHost). `chosen.backend` is set to the back end the
 * selection picked, as soon as it is picked (so a call failing in its back end names it too).
 */
/** The modules every verb but VERSION needs, loaded once per process (the agent calls dispatch for every pod). */
let verbModules:
  | Promise<
      [typeof import('../cni/net-conf.js'), typeof import('./select-backend.js'), typeof import('../cni/go-json.js'), typeof import('../cni/cni-args.js')]
    >
  | undefined;

/** Loaded by the first ADD, kept (an `await import` of a loaded module still goes through the loader). */
let resultModule: typeof import('../cni/result.js') | undefined;

export async function dispatch(env: NodeJS.ProcessEnv, stdin: () => string, host?: BackendHost, chosen?: { backend?: BackendKind }): Promise<string> {
  const cmd = readCmdEnv(env);
  if (cmd.command === 'VERSION') return versionAnswer();
  // Everything else needs these; loading them together lets the module loader overlap the reads.
  const [{ decodeConfig, configVersion, toNetConf }, { selectBackend }, { goQuoteList }, { parseCniArgs }] = await (verbModules ??= Promise.all([
    import('../cni/net-conf.js'),
    import('./select-backend.js'),
    import('../cni/go-json.js'),
    import('../cni/cni-args.js'),
  ]));
  const text = stdin();
  const raw = decodeConfig(text);
  const verb = cmd.command;
  if (verb === 'ADD' || verb === 'DEL' || verb === 'CHECK') {
    validateContainerId(cmd.containerId);
    validateInterfaceName(cmd.ifname);
  } else if (verb !== 'GC' && verb !== 'STATUS') {
    throw new CniError(CniCode.InvalidEnv, `unknown CNI_COMMAND: ${verb}`);
  }
  const version = configVersion(raw) || '0.1.0';
  if (verb === 'CHECK') requireVersion(version, '0.4.0', 'CHECK');
  if (verb === 'GC' || verb === 'STATUS') requireVersion(version, '1.1.0', verb);
  if (!isSupportedVersion(version)) {
    throw new CniError(
      CniCode.IncompatibleVersion,
      'incompatible CNI versions',
      `config is ${JSON.stringify(version)}, plugin supports ${goQuoteList(SUPPORTED_VERSIONS)}`,
    );
  }
  const conf = toNetConf(raw, version, text);
  const backend = await selectBackend(conf, env, host, chosen);
  if (verb === 'GC') {
    const { validAttachments } = await import('./gc-attachments.js');
    await backend.gc(conf, validAttachments(raw));
    return '';
  }
  if (verb === 'STATUS') {
    await backend.status(conf);
    return '';
  }
  const cniArgs = parseCniArgs(cmd.args);
  // A pod name no Kubernetes object can have fails ADD and CHECK naming it; a DEL still
  // releases the attachment (its ADD was refused, or it predates the check), as an unnamed one.
  const bad = podArgsProblem(cniArgs);
  if (bad && verb !== 'DEL')
    throw new CniError(
      CniCode.InvalidConfig,
      `CNI_ARGS ${bad.field}=${quoteText(bad.value)}: not a Kubernetes ${bad.field === 'K8S_POD_NAME' ? 'pod' : 'namespace'} name: must be ${bad.rule}`,
    );
  const pod = bad ? undefined : podRefOfArgs(cniArgs);
  const podAnnotations = runtimePodAnnotations(conf);
  const req: IpamRequest = {
    containerId: cmd.containerId,
    ifname: cmd.ifname,
    netns: cmd.netns || undefined,
    cniArgs,
    conf,
    ...(pod ? { pod } : {}),
    ...(podAnnotations ? { podAnnotations } : {}),
  };
  if (verb === 'ADD') {
    const { formatResult } = resultModule ?? (resultModule = await import('../cni/result.js'));
    return formatResult(version, await backend.add(req));
  }
  if (verb === 'DEL') await backend.del(req);
  else await backend.check(req);
  return '';
}

/** CHECK needs >= 0.4.0, GC and STATUS >= 1.1.0, in the config and in the plugin (skel order). */
function requireVersion(version: string, min: string, verb: string): void {
  let ok: boolean;
  try {
    ok = versionAtLeast(version, min);
  } catch (e) {
    throw new CniError(CniCode.DecodeFailure, `cniVersion ${JSON.stringify(version)}: ${(e as Error).message}`, undefined, { cause: e });
  }
  if (!ok) throw new CniError(CniCode.IncompatibleVersion, `config version does not allow ${verb}`);
  if (!versionAtLeast(CURRENT_VERSION, version)) {
    throw new CniError(CniCode.IncompatibleVersion, `plugin version does not allow ${verb}`);
  }
}

/**
 * The agent a config asks to be served by, read from the parsed config: `ipam.agent`, an
 * absolute socket path; `standalone` when the config also names a back end this process can
 * run itself (ranges or a datastore) once no agent listens. Undefined for anything else:
 * dispatch reports a config that does not parse, and an `agent` that is no socket path (code 7).
 */
export function agentOf(stdin: string): { readonly socket: string; readonly standalone: boolean } | undefined {
  let conf: unknown;
  try {
    conf = JSON.parse(stdin);
  } catch {
    return undefined;
  }
  const ipam = isObject(conf) ? goField(conf, 'ipam') : undefined;
  if (!isObject(ipam)) return undefined;
  const { agent, hasRanges, hasDatastore } = ipamKeys(ipam);
  if (typeof agent !== 'string' || !agent.startsWith('/')) return undefined;
  return { socket: agent, standalone: hasRanges || hasDatastore };
}
