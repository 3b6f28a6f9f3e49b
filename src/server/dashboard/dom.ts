/** DOM helpers: look an element up by id (throws if the page lacks it) and build elements. */

export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const e = document.getElementById(id);
  if (!e) throw new Error(`the page has no #${id}`);
  return e as T;
}

export type Child = Node | string | null | undefined;

export interface Attrs {
  readonly text?: string;
  readonly class?: string;
  /** Set through the CSSOM (allowed by the page's CSP, unlike a style attribute). */
  readonly style?: string;
  readonly onclick?: (ev: MouseEvent) => void;
  readonly [attr: string]: string | ((ev: MouseEvent) => void) | undefined;
}

/** `<tag>` with attributes (`text`, `class`, `style`, `onclick` are special) and children. */
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, children: readonly Child[] = []): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  const onclick = attrs.onclick;
  if (onclick) (e as HTMLElement).addEventListener('click', onclick);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || typeof v === 'function') continue;
    if (k === 'text') e.textContent = v;
    else if (k === 'class') e.className = v;
    else if (k === 'style') e.style.cssText = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) if (c !== null && c !== undefined) e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
  return e;
}

/** Replaces an element's content with one muted paragraph. */
export function mutedNote(box: HTMLElement, text: string): void {
  box.replaceChildren(el('p', { class: 'muted', text }));
}
