/**
 * bin/podipam's side of `"ipam": {"agent": SOCK}`: the call is forwarded to that agent, as the
 * native shim does, so one config works with both binaries (the plugin decides to forward from
 * the parsed config, src/plugin/dispatch.ts agentOf). When no agent listens and the config also
 * names a back end the plugin can run itself (`standalone`), the plugin runs it; otherwise CNI
 * code 11 naming the socket. As in the shim, the agent must run as root or our uid
 * (agent-client.ts), its answer must be a CNI answer (cni-answer-problem.ts) or it is code 11
 * and never printed, and a socket whose mode refuses us (EACCES) is code 5 naming it:
 * permanent, retrying cannot help.
 */
import { CniCode, CniError } from '../cni/errors.js';
import { AgentUnreachableError, callAgent, forwardedEnv } from './agent-client.js';
import type { CallAnswer } from './call-answer.js';
import { cniAnswerProblem } from './cni-answer-problem.js';

/**
 * The agent's answer, or undefined: run the call in this process. Throws the CniError to answer
 * when the agent cannot be asked (or answered something that is not a CNI answer).
 */
export async function forwardCall(socket: string, env: NodeJS.ProcessEnv, input: string, standalone: boolean): Promise<CallAnswer | undefined> {
  try {
    const a = await callAgent(socket, { kind: 'cni', call: { env: forwardedEnv(env), stdin: Buffer.from(input) } }, timeouts(env));
    const output = a.body.toString('utf8');
    const problem = cniAnswerProblem(env.CNI_COMMAND, a.status, output);
    if (problem) throw new AgentUnreachableError(socket, false, `answered ${problem}`);
    return { status: a.status, output };
  } catch (e) {
    if (!(e instanceof AgentUnreachableError)) throw e;
    if (e.absent && standalone) return undefined;
    throw new CniError(e.denied ? CniCode.IoFailure : CniCode.TryAgainLater, e.message, undefined, { cause: e });
  }
}

function timeouts(env: NodeJS.ProcessEnv): { connectTimeoutMs?: number; answerTimeoutMs?: number } {
  const ms = (v: string | undefined): number | undefined => (v && /^[1-9][0-9]*$/.test(v) ? Number(v) : undefined);
  return { connectTimeoutMs: ms(env.PODIPAM_SHIM_CONNECT_TIMEOUT_MS), answerTimeoutMs: ms(env.PODIPAM_SHIM_TIMEOUT_MS) };
}
