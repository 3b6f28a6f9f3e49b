/**
 * Linux interface names as the kernel (dev_valid_name) and CNI (`utils.ValidateInterfaceName`)
 * accept them: 1–15 bytes, not "." or "..", no "/", ":" or whitespace (Go's unicode.IsSpace:
 * ASCII \t \n \v \f \r and space, U+0085, U+00A0 and the Unicode separators). An attachment whose
 * interface name fails this can never be ADDed or DELed through CNI. Pure; the plugin maps the
 * problem to its CNI error (src/cni/skel-env.ts), importers to a conflict naming the field.
 */

/** Why `ifname` is not an interface name, or undefined when it is one. */
export type InterfaceNameProblem = 'empty' | 'too-long' | 'dot' | 'bad-character';

/** See the module comment. */
export function interfaceNameProblem(ifname: string): InterfaceNameProblem | undefined {
  if (ifname.length === 0) return 'empty';
  if (Buffer.byteLength(ifname) > 15) return 'too-long';
  if (ifname === '.' || ifname === '..') return 'dot';
  if (/[/:\s\u0085]/u.test(ifname)) return 'bad-character';
  return undefined;
}

/** The rule, for messages. */
export const INTERFACE_NAME_HINT = '1-15 bytes, no "/", ":" or whitespace, not "." or ".."';

/** A phrase per problem, for messages ("is empty", "is longer than 15 bytes", …). */
export const INTERFACE_NAME_PROBLEM_TEXT: Record<InterfaceNameProblem, string> = {
  empty: 'is empty',
  'too-long': 'is longer than 15 bytes',
  dot: 'is "." or ".."',
  'bad-character': 'contains "/", ":" or whitespace',
};
