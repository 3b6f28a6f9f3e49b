/**
 * What the docs checks read from a Markdown file: its links (outside code), the anchors its
 * headings and `<a id>` tags define (as GitHub renders them), and its fenced blocks with their
 * info strings. Pure: text in, data out.
 */

/** One fenced block: the info string after the fence (e.g. `sh runnable`), its body, its first line. */
export interface Fence {
  readonly info: string;
  readonly body: string;
  readonly line: number;
}

/** One link `[label](target)` or `![alt](target)`, with its line. */
export interface MdLink {
  readonly target: string;
  readonly line: number;
}

/** Splits `text` into prose lines (code fences blanked out) and the fences themselves. */
export function splitFences(text: string): { prose: string[]; fences: Fence[] } {
  const prose: string[] = [];
  const fences: Fence[] = [];
  let open: { marker: string; info: string; line: number; body: string[] } | undefined;
  text.split('\n').forEach((l, i) => {
    const m = /^\s*(`{3,}|~{3,})(.*)$/.exec(l);
    if (open === undefined && m !== null) {
      open = { marker: m[1] ?? '```', info: (m[2] ?? '').trim(), line: i + 1, body: [] };
      prose.push('');
    } else if (open !== undefined && m !== null && (m[1] ?? '').startsWith(open.marker) && (m[2] ?? '').trim() === '') {
      fences.push({ info: open.info, body: open.body.join('\n'), line: open.line });
      open = undefined;
      prose.push('');
    } else if (open !== undefined) {
      open.body.push(l);
      prose.push('');
    } else prose.push(l);
  });
  return { prose, fences };
}

/** The links of `text`, outside fenced blocks and inline code. */
export function linksOf(text: string): MdLink[] {
  const out: MdLink[] = [];
  splitFences(text).prose.forEach((l, i) => {
    const noCode = l.replace(/`[^`]*`/g, '');
    for (const m of noCode.matchAll(/!?\[[^\]]*\]\(<?([^)\s>]+)>?(?:\s+"[^"]*")?\)/g)) out.push({ target: m[1] ?? '', line: i + 1 });
  });
  return out;
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
export function slugOf(heading: string): string {
  const text = heading
    .replace(/<[^>]+>/g, '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
}

/** Every anchor `text` defines: headings (duplicates numbered as GitHub does) and `<a id|name>`. */
export function anchorsOf(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const l of splitFences(text).prose) {
    const h = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(l);
    if (h !== null) {
      const base = slugOf(h[1] ?? '');
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      out.add(n === 0 ? base : `${base}-${n}`);
    }
    for (const m of l.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) out.add(m[1] ?? '');
  }
  return out;
}
