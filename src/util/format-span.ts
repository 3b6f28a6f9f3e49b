/** A span of time for people, in its two largest whole units: "6h", "1h30m", "45s", "2d3h". Pure, no imports (the dashboard bundles it). */
export function formatSpan(ms: number): string {
  let s = Math.round(ms / 1000);
  const parts: string[] = [];
  for (const [u, n] of [
    ['d', 86_400],
    ['h', 3600],
    ['m', 60],
  ] as const) {
    if (s >= n) {
      parts.push(`${Math.floor(s / n)}${u}`);
      s %= n;
    }
  }
  if (s > 0 || parts.length === 0) parts.push(`${s}s`);
  return parts.slice(0, 2).join('');
}
