/**
 * Kubernetes' `$(VAR)` expansion, as kubelet applies it to `command`, `args` and `env[].value`:
 * `$(NAME)` becomes NAME's value when NAME is defined, and stays as written when it is not;
 * `$$` is an escaped `$`; any other `$` (also one that opens an unclosed `$(`) is kept as is.
 */

/** `input` with every `$(NAME)` that `lookup` knows replaced (see the module comment). */
export function expandVars(input: string, lookup: (name: string) => string | undefined): string {
  let out = '';
  let i = 0;
  while (i < input.length) {
    const c = input[i]!;
    if (c !== '$' || i + 1 >= input.length) {
      out += c;
      i++;
      continue;
    }
    const next = input[i + 1]!;
    if (next === '$') {
      out += '$';
      i += 2;
    } else if (next === '(') {
      const close = input.indexOf(')', i + 2);
      if (close < 0) {
        out += input.slice(i);
        break;
      }
      const name = input.slice(i + 2, close);
      const value = name === '' ? undefined : lookup(name);
      out += value ?? `$(${name})`;
      i = close + 1;
    } else {
      out += c + next;
      i += 2;
    }
  }
  return out;
}
