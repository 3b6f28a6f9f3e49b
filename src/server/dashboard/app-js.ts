/**
 * The dashboard's script (served at /assets/app.js): plain browser JavaScript, no framework.
 * It reads only aggregates (overview, one pool's block map, one page of nodes, check) and polls
 * them, so a 150,000-pod store costs a few kilobytes per refresh. Kept free of backticks and
 * dollar-brace so it can live in this TypeScript string.
 */
export const APP_JS = String.raw`(function () {
  'use strict';
  var API = '/api/v1';
  var POLL_MS = 2000;
  var NODE_PAGE = 50;
  var CHECK_MS = 15000; // check reads the whole store: ask less often than for the overview
  var state = {
    token: localStorage.getItem('podipam.token') || '',
    role: 'none',
    pool: null,
    block: null,
    overview: null,
    nodeFilter: '',
    nodeLimit: NODE_PAGE,
    highlightNode: null,
    timer: null,
    lastCheck: 0,
    busy: false
  };

  function $(id) { return document.getElementById(id); }
  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    if (attrs) for (var k in attrs) {
      if (k === 'text') e.textContent = attrs[k];
      else if (k === 'class') e.className = attrs[k];
      else if (k === 'style') e.style.cssText = attrs[k]; // CSSOM: allowed by the page's CSP, unlike a style attribute
      else if (k.slice(0, 2) === 'on') e.addEventListener(k.slice(2), attrs[k]);
      else e.setAttribute(k, attrs[k]);
    }
    (children || []).forEach(function (c) { if (c != null) e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c); });
    return e;
  }
  function fmt(n) {
    // Capacities beyond 2^53 arrive as decimal strings (exact); shown as 2^N they need no precision.
    if (typeof n === 'string' && /^[0-9]+$/.test(n)) n = Number(n);
    if (typeof n !== 'number') return String(n);
    if (n >= 1e12) return '2^' + Math.round(Math.log2(n));
    return n.toLocaleString('en-US');
  }
  function pct(a, b) { return b > 0 ? (100 * a / b) : 0; }
  function pctText(p) { return p === 0 ? '0%' : p < 0.1 ? '<0.1%' : (p < 10 ? p.toFixed(1) : Math.round(p)) + '%'; }
  function fillColor(f) {
    // green (empty) → amber (half) → red (full)
    var h = f < 0.5 ? 152 - (152 - 45) * (f / 0.5) : 45 - 45 * ((f - 0.5) / 0.5);
    var s = f < 0.5 ? 55 + 35 * (f / 0.5) : 90 - 15 * ((f - 0.5) / 0.5);
    var l = f < 0.5 ? 86 - 28 * (f / 0.5) : 58 - 6 * ((f - 0.5) / 0.5);
    return 'hsl(' + h.toFixed(0) + ' ' + s.toFixed(0) + '% ' + l.toFixed(0) + '%)';
  }

  function api(method, path, body) {
    var headers = { 'accept': 'application/json' };
    if (state.token) headers['authorization'] = 'Bearer ' + state.token;
    if (body !== undefined) headers['content-type'] = 'application/json';
    return fetch(API + path, { method: method, headers: headers, body: body === undefined ? undefined : JSON.stringify(body) })
      .then(function (r) {
        return r.text().then(function (t) {
          var data = t ? JSON.parse(t) : null;
          if (!r.ok) {
            var err = new Error(data && data.error ? data.error.message : ('HTTP ' + r.status));
            err.status = r.status;
            throw err;
          }
          return data;
        });
      });
  }

  function setLive(ok, text) {
    $('live').className = 'live ' + (ok ? 'ok' : 'bad');
    $('live-text').textContent = text;
  }
  function showError(msg) {
    var b = $('error-banner');
    if (!msg) { b.hidden = true; return; }
    b.textContent = msg;
    b.hidden = false;
  }

  // ---- overview: stats and pools ----
  function renderOverview(o) {
    state.overview = o;
    var t = o.totals;
    setStat('pools', t.pools);
    setStat('nodes', t.nodes);
    setStat('blocks', t.blocks);
    setStat('allocated', t.allocated);
    $('datastore').textContent = o.datastore || '';
    var box = $('pools');
    box.textContent = '';
    if (o.pools.length === 0) box.appendChild(el('p', { class: 'muted', text: 'No pools yet. Create one with "podipam pool create NAME --cidr CIDR" or POST /api/v1/pools.' }));
    if (!state.pool || !o.pools.some(function (p) { return p.name === state.pool; })) {
      state.pool = o.pools.length ? o.pools[0].name : null;
      state.block = null;
    }
    o.pools.forEach(function (p) {
      var u = pct(p.allocated, p.capacity);
      var inBlocks = p.blocks * p.blockCapacity;
      var bar = el('div', { class: 'bar' + (u >= 90 ? ' hot' : u >= 70 ? ' warn' : '') }, [el('span', { style: 'width:' + Math.min(100, u).toFixed(2) + '%' })]);
      var card = el('div', {
        class: 'pool' + (p.name === state.pool ? ' selected' : ''),
        'data-pool': p.name, 'data-allocated': String(p.allocated), 'data-capacity': String(p.capacity), 'data-blocks': String(p.blocks),
        role: 'button', tabindex: '0',
        onclick: function () { selectPool(p.name); }
      }, [
        el('div', { class: 'row' }, [
          el('div', {}, [el('span', { class: 'name', text: p.name }), el('span', { class: 'badge' + (p.family === 6 ? ' v6' : ''), text: 'IPv' + p.family }), p.disabled ? el('span', { class: 'badge off', text: 'disabled' }) : null]),
          el('div', { class: 'pct', text: pctText(u) })
        ]),
        el('div', { class: 'cidr', text: p.cidr + '  ·  /' + p.blockSize + ' blocks of ' + fmt(p.blockCapacity) }),
        bar,
        el('div', { class: 'row nums' }, [
          el('span', {}, [el('b', { class: 'allocated', text: fmt(p.allocated) }), ' of ' + fmt(p.capacity) + ' addresses'])
        ]),
        el('div', { class: 'row nums' }, [
          el('span', {}, [el('b', { text: fmt(p.blocks) }), ' blocks claimed' + (p.blockSlots != null ? ' of ' + fmt(p.blockSlots) : '')]),
          el('span', { text: inBlocks > 0 ? 'blocks ' + pctText(pct(p.allocated, inBlocks)) + ' full' : '' })
        ])
      ]);
      box.appendChild(card);
    });
  }
  function setStat(name, v) {
    var e = document.querySelector('[data-stat="' + name + '"]');
    e.textContent = fmt(v);
    e.setAttribute('data-value', String(v));
  }

  function selectPool(name) {
    if (state.pool === name) return;
    state.pool = name;
    state.block = null;
    Array.prototype.forEach.call(document.querySelectorAll('.pool'), function (c) { c.classList.toggle('selected', c.getAttribute('data-pool') === name); });
    $('block-detail').innerHTML = '<p class="muted">Click a block to see its addresses.</p>';
    refreshMap();
  }

  // ---- block map ----
  function refreshMap() {
    if (!state.pool) { $('block-map').textContent = ''; $('map-pool').textContent = ''; return Promise.resolve(); }
    var pool = state.pool;
    return api('GET', '/pools/' + encodeURIComponent(pool) + '/blocks').then(function (m) {
      if (pool === state.pool) renderMap(m);
    });
  }
  function renderMap(m) {
    $('map-pool').textContent = '— ' + m.pool + ' (' + m.cidr + ')';
    var box = $('block-map');
    var frag = document.createDocumentFragment();
    var claimed = 0;
    m.cells.forEach(function (c) {
      if (typeof c === 'number') {
        for (var i = 0; i < c; i++) frag.appendChild(el('div', { class: 'cell free' }));
        return;
      }
      claimed++;
      var node = c[1] >= 0 ? m.nodes[c[1]] : '';
      var f = m.blockCapacity > 0 ? c[2] / m.blockCapacity : 0;
      var cell = el('div', {
        class: 'cell' + (c[0] === state.block ? ' selected' : '') + (state.highlightNode && node === state.highlightNode ? ' hl' : ''),
        style: 'background:' + fillColor(f),
        'data-block': c[0], 'data-node': node, 'data-allocated': String(c[2]),
        role: 'gridcell'
      });
      frag.appendChild(cell);
    });
    box.textContent = '';
    box.appendChild(frag);
    var note = claimed + ' claimed block' + (claimed === 1 ? '' : 's');
    if (m.slots == null) note += ' (the pool has too many block slots to draw the unclaimed ones)';
    else note += ' of ' + fmt(m.slots) + ' block slots';
    $('map-note').textContent = note;
    if (state.block) refreshBlock();
  }
  function cellOf(target) { return target && target.classList && target.classList.contains('cell') && !target.classList.contains('free') ? target : null; }
  function initMapEvents() {
    var box = $('block-map');
    var tip = $('tooltip');
    box.addEventListener('mousemove', function (ev) {
      var c = cellOf(ev.target);
      if (!c) { tip.hidden = true; return; }
      var cap = mapCapacity();
      tip.innerHTML = '';
      tip.appendChild(el('div', { class: 'mono', text: c.getAttribute('data-block') }));
      tip.appendChild(el('div', { text: (c.getAttribute('data-node') || 'no affinity') + ' · ' + c.getAttribute('data-allocated') + ' / ' + cap + ' used' }));
      tip.hidden = false;
      tip.style.left = (ev.clientX + 14) + 'px';
      tip.style.top = (ev.clientY + 14) + 'px';
    });
    box.addEventListener('mouseleave', function () { tip.hidden = true; });
    box.addEventListener('click', function (ev) {
      var c = cellOf(ev.target);
      if (!c) return;
      state.block = c.getAttribute('data-block');
      Array.prototype.forEach.call(box.querySelectorAll('.cell.selected'), function (x) { x.classList.remove('selected'); });
      c.classList.add('selected');
      refreshBlock();
    });
  }
  function mapCapacity() {
    var p = state.overview && state.overview.pools.filter(function (x) { return x.name === state.pool; })[0];
    return p ? p.blockCapacity : '?';
  }

  function refreshBlock() {
    var cidr = state.block;
    if (!cidr) return Promise.resolve();
    return api('GET', '/blocks/' + encodeURIComponent(cidr)).then(function (b) {
      if (cidr === state.block) renderBlock(b);
    }).catch(function (e) {
      if (e.status === 404) { state.block = null; $('block-detail').innerHTML = '<p class="muted">That block was released.</p>'; }
      else throw e;
    });
  }
  function renderBlock(b) {
    var box = $('block-detail');
    box.textContent = '';
    box.setAttribute('data-block', b.cidr);
    box.appendChild(el('h3', { text: b.cidr }));
    box.appendChild(el('div', { class: 'muted small' }, [
      'node ', el('b', { text: b.node || 'none' }), ' · ',
      el('span', { class: 'block-allocated', 'data-value': String(b.allocated), text: String(b.allocated) }),
      ' of ' + b.capacity + ' used'
    ]));
    box.appendChild(el('div', { class: 'bar' }, [el('span', { style: 'width:' + pct(b.allocated, b.capacity).toFixed(1) + '%' })]));
    if (b.allocations.length === 0) { box.appendChild(el('p', { class: 'muted', text: 'No addresses allocated.' })); return; }
    var rows = b.allocations.map(function (a) {
      return el('tr', { 'data-ip': a.ip }, [el('td', { class: 'mono', text: a.ip }), el('td', { class: 'mono small', text: a.handle || '' })]);
    });
    box.appendChild(el('table', { class: 'grid' }, [
      el('thead', {}, [el('tr', {}, [el('th', { text: 'Address' }), el('th', { text: 'Handle' })])]),
      el('tbody', {}, rows)
    ]));
  }

  // ---- nodes ----
  function refreshNodes() {
    var q = '?limit=' + state.nodeLimit + (state.nodeFilter ? '&q=' + encodeURIComponent(state.nodeFilter) : '');
    return api('GET', '/nodes' + q).then(renderNodes);
  }
  function renderNodes(r) {
    var body = $('nodes');
    body.textContent = '';
    $('nodes-count').textContent = '(' + fmt(r.total) + ')';
    if (r.items.length === 0) body.appendChild(el('tr', {}, [el('td', { colspan: '4', class: 'muted', text: state.nodeFilter ? 'No node matches.' : 'No nodes yet.' })]));
    r.items.forEach(function (n) {
      var tr = el('tr', {
        class: 'clickable' + (state.highlightNode === n.name ? ' selected' : ''), 'data-node': n.name, 'data-allocated': String(n.allocated),
        title: 'highlight this node\'s blocks',
        onclick: function () { state.highlightNode = state.highlightNode === n.name ? null : n.name; highlight(); }
      }, [
        el('td', {}, [el('b', { text: n.name }), n.registered ? null : el('span', { class: 'badge off', title: 'known from block affinities only (no node record)', text: 'unregistered' }), n.deleting ? el('span', { class: 'badge off', text: 'deleting' }) : null]),
        el('td', { class: 'mono', text: n.podCIDRs.length ? n.podCIDRs.join(', ') : '—' }),
        el('td', { class: 'num', text: fmt(n.blocks) }),
        el('td', { class: 'num', text: fmt(n.allocated) })
      ]);
      body.appendChild(tr);
    });
    $('nodes-more').hidden = !r.next;
  }
  function highlight() {
    Array.prototype.forEach.call(document.querySelectorAll('#block-map .cell'), function (c) {
      c.classList.toggle('hl', !!state.highlightNode && c.getAttribute('data-node') === state.highlightNode);
    });
  }

  // ---- check ----
  function refreshCheck(fresh) {
    state.lastCheck = Date.now();
    return api('GET', '/check' + (fresh ? '?maxAge=0' : '')).then(renderCheck);
  }
  function describe(x) {
    var parts = [];
    ['ip', 'handle', 'block', 'node', 'pool'].forEach(function (k) { if (x[k]) parts.push(k + ' ' + x[k]); });
    return parts.join(' · ');
  }
  function renderCheck(c) {
    var box = $('check');
    box.textContent = '';
    var n = c.leaks.length + c.problems.length;
    var s = document.querySelector('[data-stat="issues"]');
    s.textContent = c.leaks.length + ' / ' + c.problems.length;
    s.setAttribute('data-value', String(n));
    $('check-time').textContent = 'checked ' + new Date(c.checkedAt).toLocaleTimeString();
    if (n === 0) { box.appendChild(el('div', { class: 'allgood', text: 'No leaks, no problems.' })); return; }
    var admin = state.role === 'admin';
    function item(kind, x) {
      var canRelease = admin && (x.ip || x.handle);
      var title, detail;
      if (kind === 'leak') {
        title = el('div', { class: 'mono strong', text: x.ip });
        detail = 'held by handle ' + x.handle + ', whose record is gone · block ' + x.block;
      } else {
        title = el('div', { text: x.message || describe(x) });
        detail = x.key || describe(x);
      }
      return el('div', { class: 'issue', 'data-kind': kind }, [
        el('div', {}, [
          el('div', { class: 'kind ' + kind, text: kind === 'leak' ? 'leaked address' : (x.kind || 'problem').replace(/-/g, ' ') }),
          title,
          el('div', { class: 'muted small mono', text: detail })
        ]),
        canRelease ? el('button', { class: 'danger', type: 'button', onclick: function (ev) { release(ev.target, x); }, text: 'Release' }) : null
      ]);
    }
    c.leaks.slice(0, 200).forEach(function (x) { box.appendChild(item('leak', x)); });
    c.problems.slice(0, 200).forEach(function (x) { box.appendChild(item('problem', x)); });
    if (n > 400) box.appendChild(el('p', { class: 'muted small', text: (n - 400) + ' more not shown; use "podipam ipam check --json".' }));
    if (!admin) box.appendChild(el('p', { class: 'muted small', text: 'Releasing needs the admin token.' }));
  }
  function release(button, x) {
    var what = x.ip ? { ip: x.ip } : { handle: x.handle };
    if (!confirm('Release ' + (x.ip || x.handle) + '?')) return;
    button.disabled = true;
    api('POST', '/release', what).then(function () { return Promise.all([refreshCheck(true), tick()]); })
      .catch(function (e) { showError('release failed: ' + e.message); button.disabled = false; });
  }

  // ---- loop ----
  function tick() {
    if (state.busy) return Promise.resolve();
    state.busy = true;
    var jobs = [api('GET', '/overview').then(renderOverview).then(refreshMap), refreshNodes()];
    if (Date.now() - state.lastCheck > CHECK_MS) jobs.push(refreshCheck());
    return Promise.all(jobs).then(function () {
      showError(null);
      setLive(true, 'live · ' + new Date().toLocaleTimeString());
    }).catch(function (e) {
      if (e.status === 401) { $('token-banner').hidden = false; setLive(false, 'token needed'); }
      else { setLive(false, 'disconnected'); showError(e.message); }
    }).then(function () { state.busy = false; });
  }
  function whoami() {
    return api('GET', '/whoami').then(function (w) {
      state.role = w.role;
      $('token-banner').hidden = !(w.authRequired && w.role === 'none');
      $('token-button').hidden = !w.authRequired && w.role === 'admin';
    });
  }
  // The URL podipam serve prints carries its install token (?token=…): keep it, then drop it
  // from the address bar so it is not left in the history or shown on a shared screen.
  function takeUrlToken() {
    var m = /[?&]token=([^&#]*)/.exec(location.search);
    if (!m) return;
    state.token = decodeURIComponent(m[1]);
    localStorage.setItem('podipam.token', state.token);
    history.replaceState(null, '', location.pathname + location.hash);
  }
  function start() {
    takeUrlToken();
    initMapEvents();
    $('token-form').addEventListener('submit', function (ev) {
      ev.preventDefault();
      state.token = $('token-input').value.trim();
      localStorage.setItem('podipam.token', state.token);
      state.lastCheck = 0;
      whoami().then(tick);
    });
    $('token-button').addEventListener('click', function () { $('token-banner').hidden = !$('token-banner').hidden; });
    var debounce = null;
    $('node-filter').addEventListener('input', function (ev) {
      clearTimeout(debounce);
      debounce = setTimeout(function () { state.nodeFilter = ev.target.value.trim(); state.nodeLimit = NODE_PAGE; refreshNodes(); }, 200);
    });
    $('nodes-more').addEventListener('click', function () { state.nodeLimit += NODE_PAGE * 4; refreshNodes(); });
    whoami().catch(function () {}).then(tick);
    state.timer = setInterval(function () { if (!document.hidden) tick(); }, POLL_MS);
  }
  start();
})();
`;
