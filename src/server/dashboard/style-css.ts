/** The dashboard's stylesheet (served at /assets/style.css). */
export const STYLE_CSS = `
:root {
  --bg: #f4f6fa; --card: #ffffff; --ink: #0f172a; --muted: #64748b; --line: #e2e8f0;
  --accent: #2563eb; --accent-soft: #dbeafe; --danger: #dc2626; --ok: #059669;
  --fill0: hsl(152 55% 86%); --fill50: hsl(45 90% 58%); --fill100: hsl(0 75% 52%);
  --free: #eef2f7;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  color: var(--ink); background: var(--bg);
}
* { box-sizing: border-box; }
body { margin: 0; font-size: 14px; line-height: 1.4; }
.top { display: flex; align-items: center; gap: 16px; padding: 12px 24px; background: #0f172a; color: #e2e8f0; }
.brand { display: flex; align-items: center; gap: 10px; font-weight: 700; font-size: 18px; letter-spacing: .2px; color: #fff; }
.logo { display: grid; grid-template-columns: 8px 8px; gap: 2px; }
.logo i { width: 8px; height: 8px; border-radius: 2px; background: #10b981; }
.logo i:nth-child(2) { background: #f59e0b; } .logo i:nth-child(3) { background: #3b82f6; } .logo i:nth-child(4) { background: #475569; }
.sub { color: #94a3b8; font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12px; }
.spacer { flex: 1; }
.live { display: flex; align-items: center; gap: 8px; font-size: 12px; color: #cbd5e1; }
.live .dot { width: 8px; height: 8px; border-radius: 50%; background: #64748b; }
.live.ok .dot { background: #10b981; box-shadow: 0 0 0 3px rgba(16,185,129,.25); }
.live.bad .dot { background: #ef4444; }
button { font: inherit; border: 1px solid var(--accent); background: var(--accent); color: #fff; border-radius: 6px; padding: 4px 12px; cursor: pointer; }
button:hover { filter: brightness(1.08); }
button.ghost { background: transparent; color: inherit; border-color: #475569; }
main button.ghost { border-color: var(--line); color: var(--ink); }
button.danger { background: #fff; color: var(--danger); border-color: #fca5a5; padding: 2px 10px; font-size: 12px; }
button.danger:hover { background: #fef2f2; }
button:disabled { opacity: .5; cursor: default; }
.banner { padding: 10px 24px; background: #fffbeb; border-bottom: 1px solid #fde68a; }
.banner.error { background: #fef2f2; border-color: #fecaca; color: #991b1b; }
.banner form { display: flex; gap: 10px; align-items: center; }
.banner input { padding: 4px 8px; border: 1px solid var(--line); border-radius: 6px; min-width: 280px; }
main { padding: 20px 24px 40px; max-width: 1440px; margin: 0 auto; display: flex; flex-direction: column; gap: 18px; }
.stats { display: grid; grid-template-columns: repeat(5, 1fr); gap: 14px; }
.stat { background: var(--card); border: 1px solid var(--line); border-radius: 10px; padding: 14px 16px; }
.stat .label { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .5px; }
.stat .value { font-size: 26px; font-weight: 650; margin-top: 4px; font-variant-numeric: tabular-nums; }
.stat .value small { font-size: 13px; color: var(--muted); font-weight: 500; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 10px; padding: 16px 18px; min-width: 0; }
.card h2 { margin: 0 0 12px; font-size: 15px; font-weight: 650; }
.card-head { display: flex; align-items: baseline; justify-content: space-between; gap: 12px; margin-bottom: 8px; }
.card-head h2 { margin: 0; }
.muted { color: var(--muted); font-weight: 400; }
.small { font-size: 12px; }
.pools { display: grid; grid-template-columns: repeat(auto-fill, minmax(320px, 1fr)); gap: 12px; }
.pool { border: 1px solid var(--line); border-radius: 8px; padding: 12px 14px; cursor: pointer; transition: border-color .15s, box-shadow .15s; }
.pool:hover { border-color: #93c5fd; }
.pool.selected { border-color: var(--accent); box-shadow: 0 0 0 3px var(--accent-soft); }
.pool .row { display: flex; justify-content: space-between; align-items: baseline; gap: 8px; }
.pool .name { font-weight: 650; font-size: 15px; }
.pool .cidr { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; color: var(--muted); font-size: 12px; margin-top: 2px; white-space: pre; }
.pool .pct { font-size: 18px; font-weight: 650; font-variant-numeric: tabular-nums; }
.badge { display: inline-block; font-size: 11px; padding: 1px 7px; border-radius: 999px; background: var(--accent-soft); color: #1d4ed8; margin-left: 6px; vertical-align: 1px; }
.badge.v6 { background: #ede9fe; color: #6d28d9; }
.badge.off { background: #f1f5f9; color: var(--muted); }
.bar { height: 10px; background: #eef2f7; border-radius: 999px; overflow: hidden; margin: 10px 0 6px; }
.bar > span { display: block; height: 100%; border-radius: 999px; background: linear-gradient(90deg, #10b981, #34d399); transition: width .4s; min-width: 2px; }
.bar.warn > span { background: linear-gradient(90deg, #f59e0b, #fbbf24); }
.bar.hot > span { background: linear-gradient(90deg, #dc2626, #f87171); }
.pool .nums { font-size: 12px; color: var(--muted); font-variant-numeric: tabular-nums; }
.pool .nums b { color: var(--ink); font-weight: 600; }
.map-wrap { display: grid; grid-template-columns: minmax(0, 1fr) 340px; gap: 16px; align-items: start; }
.block-map { display: flex; flex-wrap: wrap; gap: 3px; align-content: flex-start; min-height: 60px; max-height: 420px; overflow: auto; padding: 2px; }
.cell { width: 15px; height: 15px; border-radius: 3px; background: var(--free); cursor: pointer; outline-offset: 1px; }
.cell.free { cursor: default; }
.cell:not(.free):hover { outline: 2px solid #0f172a; }
.cell.selected { outline: 2px solid var(--accent); }
.cell.hl { outline: 2px solid #7c3aed; }
.block-detail { border-left: 1px solid var(--line); padding-left: 16px; min-height: 120px; max-height: 420px; overflow: auto; }
.block-detail h3 { margin: 0 0 4px; font-size: 14px; font-family: ui-monospace, SFMono-Regular, Menlo, monospace; }
.legend { display: flex; gap: 14px; font-size: 12px; color: var(--muted); }
.legend span { display: inline-flex; align-items: center; gap: 5px; }
.sw { display: inline-block; width: 11px; height: 11px; border-radius: 3px; }
.sw.free { background: var(--free); border: 1px solid var(--line); }
.sw.f0 { background: var(--fill0); } .sw.f50 { background: var(--fill50); } .sw.f100 { background: var(--fill100); }
.two { display: grid; grid-template-columns: minmax(0, 3fr) minmax(0, 2fr); gap: 18px; align-items: start; }
table.grid { width: 100%; border-collapse: collapse; font-size: 13px; }
table.grid th { text-align: left; font-weight: 600; color: var(--muted); font-size: 11px; text-transform: uppercase; letter-spacing: .4px; border-bottom: 1px solid var(--line); padding: 6px 8px; }
table.grid th.num { text-align: right; }
table.grid td { border-bottom: 1px solid #f1f5f9; padding: 6px 8px; vertical-align: top; }
table.grid tbody tr:hover { background: #f8fafc; }
table.grid tr.clickable { cursor: pointer; }
.num { text-align: right; font-variant-numeric: tabular-nums; }
.mono { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12px; }
input[type=search] { padding: 5px 10px; border: 1px solid var(--line); border-radius: 6px; min-width: 200px; font: inherit; }
.pager { text-align: center; margin-top: 8px; }
.issue { display: flex; justify-content: space-between; gap: 10px; align-items: center; padding: 8px 0; border-bottom: 1px solid #f1f5f9; }
.issue .kind { font-size: 11px; text-transform: uppercase; letter-spacing: .4px; font-weight: 650; color: #b45309; }
.issue .kind.leak { color: var(--danger); }
.strong { font-weight: 650; }
table.grid tr.selected { background: #f5f3ff; }
.allgood { display: flex; align-items: center; gap: 10px; color: var(--ok); font-weight: 600; padding: 8px 0; }
.allgood::before { content: "✓"; display: inline-grid; place-items: center; width: 22px; height: 22px; border-radius: 50%; background: #d1fae5; }
.tooltip { position: fixed; pointer-events: none; background: #0f172a; color: #f8fafc; font-size: 12px; padding: 6px 9px; border-radius: 6px; z-index: 10; white-space: nowrap; box-shadow: 0 4px 14px rgba(15,23,42,.25); }
.tooltip .mono { color: #cbd5e1; }
@media (max-width: 1000px) { .stats { grid-template-columns: repeat(2, 1fr); } .two, .map-wrap { grid-template-columns: 1fr; } .block-detail { border-left: 0; padding-left: 0; } }
`;
