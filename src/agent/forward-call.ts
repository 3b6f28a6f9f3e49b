/**
 * bin/podipam's side of `"ipam": {"agent": SOCK}`: the call is forwarded to that agent, as the
 * native shim does, so one config works with both binaries. When no agent listens and the
 * config also names a back end this process can run itself (`ranges`/`subnet` or `datastore`),
 * the plugin runs it (standalone); otherwise CNI code 11 naming the socket. As in the shim, the
 * agent must run as root or our uid (agent-client.ts), its answer must be a CNI answer
 * (cni-answer-problem.ts) or it is code 11 and never printed, and a socket whose mode refuses
 * us (EACCES) is code 5 naming it: permanent, retrying cannot help.
 */
import { CniCode, CniError } from '../cni/errors.js';
import { goField, isObject } from '../cni/go-decode.js';
import type { PluginAnswer } from '../plugin/plugin-call.js';
import { AgentUnreachableError, callAgent, forwardedEnv } from './agent-client.js';
import { cniAnswerProblem } from './cni-answer-problem.js';

/** The agent's answer, an error answer, or undefined: run the call in this process. */
export async function forwardConfiguredCall(env: NodeJS.ProcessEnv, input: string): Promise<PluginAnswer | undefined> {
  let ipam: unknown;
  try {
    const conf: unknown = JSON.parse(input);
    ipam = isObject(conf) ? goField(conf, 'ipam') : undefined;
  } catch {
    return undefined; // the plugin reports the decode error
  }
  if (!isObject(ipam)) return undefined;
  const socket = goField(ipam, 'agent');
  if (typeof socket !== 'string' || !socket.startsWith('/')) return undefined; // reported as code 7
  try {
    const a = await callAgent(socket, { kind: 'cni', call: { env: forwardedEnv(env), stdin: Buffer.from(input) } }, timeouts(env));
    const out = a.body.toString('utf8');
    const problem = cniAnswerProblem(env.CNI_COMMAND, a.status, out);
    if (problem) throw new AgentUnreachableError(socket, false, `answered ${problem}`);
    return { status: a.status, out };
  } catch (e) {
    if (!(e instanceof AgentUnreachableError)) throw e;
    const standalone = ['ranges', 'subnet', 'datastore'].some((k) => goField(ipam, k) !== undefined);
    if (e.absent && standalone) return undefined;
    const { errorJson } = await import('../plugin/plugin-call.js');
    return { status: 1, out: errorJson(new CniError(e.denied ? CniCode.IoFailure : CniCode.TryAgainLater, e.message)) };
  }
}

function timeouts(env: NodeJS.ProcessEnv): { connectTimeoutMs?: number; answerTimeoutMs?: number } {
  const ms = (v: string | undefined): number | undefined => (v && /^[1-9][0-9]*$/.test(v) ? Number(v) : undefined);
  return { connectTimeoutMs: ms(env.PODIPAM_SHIM_CONNECT_TIMEOUT_MS), answerTimeoutMs: ms(env.PODIPAM_SHIM_TIMEOUT_MS) };
}
