/** A pod field the test kubelet cannot honour: it names the field's path, it never ignores it. */
export class UnsupportedFieldError extends Error {
  constructor(
    readonly path: string,
    readonly why: string,
  ) {
    super(`${path}: ${why}`);
    this.name = 'UnsupportedFieldError';
  }
}

type Obj = Record<string, unknown>;

/** `o` as an object (an empty one when absent); throws naming `path` when it is something else. */
export function objAt(o: unknown, path: string): Obj {
  if (o === undefined || o === null) return {};
  if (typeof o !== 'object' || Array.isArray(o)) throw new UnsupportedFieldError(path, `expected an object, got ${JSON.stringify(o)}`);
  return o as Obj;
}

/** `o` as an array of objects (empty when absent). */
export function listAt(o: unknown, path: string): Obj[] {
  if (o === undefined || o === null) return [];
  if (!Array.isArray(o)) throw new UnsupportedFieldError(path, `expected a list, got ${JSON.stringify(o)}`);
  return o.map((x, i) => objAt(x, `${path}[${i}]`));
}

/** Throws naming the first key of `o` not in `known` (the fields this helper honours). */
export function onlyKnown(o: Obj, path: string, known: readonly string[]): void {
  for (const k of Object.keys(o)) {
    if (!known.includes(k)) throw new UnsupportedFieldError(`${path}.${k}`, 'not honoured by the test kubelet (test/helpers/kubelet.ts)');
  }
}
