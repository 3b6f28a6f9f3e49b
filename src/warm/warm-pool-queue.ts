/**
 * A binary min-heap under a total order given by `before` (true when `a` comes out first). The
 * warm pool's idle queue (by free time) and its sticky-expiry queue. The pool takes the head or
 * drops stale entries lazily when they reach it; `removeWhere` (a pool withdrawn) rebuilds the heap.
 */
export class MinQueue<T> {
  readonly #items: T[] = [];
  readonly #before: (a: T, b: T) => boolean;

  constructor(before: (a: T, b: T) => boolean) {
    this.#before = before;
  }

  get size(): number {
    return this.#items.length;
  }

  /** The first item, not removed; undefined when empty. */
  peek(): T | undefined {
    return this.#items[0];
  }

  push(item: T): void {
    const a = this.#items;
    a.push(item);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.#before(a[i]!, a[p]!)) break;
      [a[i], a[p]] = [a[p]!, a[i]!];
      i = p;
    }
  }

  /** Removes and returns the first item; undefined when empty. */
  pop(): T | undefined {
    const a = this.#items;
    const top = a[0];
    const last = a.pop();
    if (a.length === 0 || last === undefined) return top;
    a[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < a.length && this.#before(a[l]!, a[m]!)) m = l;
      if (r < a.length && this.#before(a[r]!, a[m]!)) m = r;
      if (m === i) return top;
      [a[i], a[m]] = [a[m]!, a[i]!];
      i = m;
    }
  }

  /** Removes every item `pred` matches and returns them in queue order; O(n), the heap untouched when none match. */
  removeWhere(pred: (item: T) => boolean): T[] {
    if (!this.#items.some(pred)) return [];
    const all = this.sorted();
    this.#items.length = 0;
    const out: T[] = [];
    for (const x of all) {
      if (pred(x)) out.push(x);
      else this.#items.push(x); // a sorted array is a valid heap
    }
    return out;
  }

  /** Every item in queue order (a sorted copy; the heap is unchanged). */
  sorted(): T[] {
    return [...this.#items].sort((x, y) => (this.#before(x, y) ? -1 : this.#before(y, x) ? 1 : 0));
  }
}
