/**
 * Errors the JavaScript engine throws on a bug of ours (a stack overflow, a property of
 * undefined, a call of a non-function) are TypeError/RangeError like the ones our code throws
 * on purpose for bad input (STYLE.md), so edges that map TypeError/RangeError to "your input
 * was wrong" (HTTP 400, CLI exit 2) ask this first. Told apart by V8's wording.
 */
const ENGINE_MESSAGES: readonly RegExp[] = [
  /^Maximum call stack size exceeded/,
  /^Invalid (array|string|typed array) length/,
  /^Array buffer allocation failed/,
  /^Cannot (read|set) propert(y|ies) of (undefined|null)/,
  /^Cannot (convert|mix BigInt|destructure|create property|assign to read only)/,
  /^Do not know how to serialize a BigInt/,
  / cannot be converted to a BigInt/,
  /^Converting circular structure/,
  / is not (a function|a constructor|iterable)/,
  /^Assignment to constant variable/,
  /^Class constructor .* cannot be invoked without 'new'/,
  /^Reduce of empty array/,
];

/** True for an error raised by the engine rather than thrown on purpose by our code. */
export function isEngineError(e: unknown): boolean {
  if (!(e instanceof TypeError || e instanceof RangeError)) return false;
  return ENGINE_MESSAGES.some((re) => re.test(e.message));
}
