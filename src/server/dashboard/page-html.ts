/**
 * The dashboard's one page. No framework and no CDN (the machines have no internet): the
 * markup below, style.css and app.js, all served by `podipam serve`. The page carries no
 * data; app.js fetches aggregates from the API and polls for live updates.
 */
export const PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>podipam</title>
<link rel="icon" href="data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'%3E%3Crect x='1' y='1' width='6' height='6' rx='1' fill='%2310b981'/%3E%3Crect x='9' y='1' width='6' height='6' rx='1' fill='%23f59e0b'/%3E%3Crect x='1' y='9' width='6' height='6' rx='1' fill='%233b82f6'/%3E%3Crect x='9' y='9' width='6' height='6' rx='1' fill='%23cbd5e1'/%3E%3C/svg%3E">
<link rel="stylesheet" href="/assets/style.css">
</head>
<body>
<header class="top">
  <div class="brand"><span class="logo" aria-hidden="true"><i></i><i></i><i></i><i></i></span>podipam</div>
  <div class="sub" id="datastore"></div>
  <div class="spacer"></div>
  <div class="live" id="live"><span class="dot"></span><span id="live-text">connecting…</span></div>
  <button class="ghost" id="token-button" type="button">Token</button>
</header>
<div class="banner" id="token-banner" hidden>
  <form id="token-form">
    <label for="token-input">This server requires a bearer token.</label>
    <input id="token-input" type="password" autocomplete="off" placeholder="read-only or admin token">
    <button type="submit">Use token</button>
  </form>
</div>
<div class="banner error" id="error-banner" hidden></div>
<main>
  <section class="stats" id="stats">
    <div class="stat"><div class="label">Pools</div><div class="value" data-stat="pools">–</div></div>
    <div class="stat"><div class="label">Nodes</div><div class="value" data-stat="nodes">–</div></div>
    <div class="stat"><div class="label">Blocks</div><div class="value" data-stat="blocks">–</div></div>
    <div class="stat"><div class="label">Allocated addresses</div><div class="value" data-stat="allocated">–</div></div>
    <div class="stat"><div class="label">Leaks / problems</div><div class="value" data-stat="issues">–</div></div>
  </section>

  <section class="card">
    <h2>Pools</h2>
    <div id="pools" class="pools"><p class="muted">Loading…</p></div>
  </section>

  <section class="card">
    <div class="card-head">
      <h2>Block map <span class="muted" id="map-pool"></span></h2>
      <div class="legend"><span><i class="sw free"></i>unclaimed</span><span><i class="sw f0"></i>empty</span><span><i class="sw f50"></i>half full</span><span><i class="sw f100"></i>full</span></div>
    </div>
    <div class="map-wrap">
      <div id="block-map" class="block-map" role="grid" aria-label="blocks"></div>
      <aside id="block-detail" class="block-detail"><p class="muted">Click a block to see its addresses.</p></aside>
    </div>
    <div id="map-note" class="muted small"></div>
  </section>

  <div class="two">
    <section class="card">
      <div class="card-head">
        <h2>Nodes <span class="muted" id="nodes-count"></span></h2>
        <input id="node-filter" type="search" placeholder="filter by name" aria-label="filter nodes">
      </div>
      <table class="grid">
        <thead><tr><th>Node</th><th>Pod CIDRs</th><th class="num">Blocks</th><th class="num">Addresses</th></tr></thead>
        <tbody id="nodes"></tbody>
      </table>
      <div class="pager"><button class="ghost" id="nodes-more" type="button" hidden>Show more</button></div>
    </section>

    <section class="card">
      <div class="card-head">
        <h2>Leaks and problems</h2>
        <span class="muted small" id="check-time"></span>
      </div>
      <div id="check"><p class="muted">Checking…</p></div>
    </section>
  </div>
</main>
<div id="tooltip" class="tooltip" hidden></div>
<script src="/assets/app.js"></script>
</body>
</html>
`;
