/*
 * The dashboard's DLQ section, for a watched key with a dump: its areas
 * (records, bytes, oldest and newest age; /api/v1/dlq), a page of one
 * area's records with why each was dead-lettered and a preview
 * (/api/v1/dlq/records), and the actions: redrive the selected records or
 * all at a rate (POST /api/v1/dlq/redrive; the daemon moves them on a
 * thread of its own, whose progress this shows), purge the dead store
 * (POST /api/v1/dlq/purge, after a confirm) and download an area as JSON
 * lines (a plain link to /api/v1/dlq/download).
 *
 * Polling: every two seconds while the page is visible, one request at a
 * time, for the key dashboard.js watches; a key without a dump (409) hides
 * the section. The table is drawn again only when the page's records
 * change, and the selection (by location) survives a redraw.
 * Uses dashboard.js's call/explain/say (window.blqDashboard).
 */
'use strict';

(function () {
  const POLL_MS = 2000;
  const $ = id => document.getElementById(id);
  const D = window.blqDashboard;
  const st = {
    key: '',
    page: 1,
    perPage: 20,
    shown: '',          /* the locations drawn, to redraw only on change */
    selected: new Set(),
    summary: null,
    timer: 0,
    busy: false
  };

  function age(s) {
    if (!s) return '–';
    if (s < 90) return s.toFixed(1) + ' s';
    if (s < 5400) return (s / 60).toFixed(1) + ' min';
    return (s / 3600).toFixed(1) + ' h';
  }

  function drawAreas(sum) {
    const box = $('dlq-areas');
    box.replaceChildren();
    for (const name of ['dump', 'quarantine', 'dead']) {
      const a = sum.areas[name];
      const tile = document.createElement('div');
      tile.className = 'tile';
      tile.dataset.area = name;
      const label = document.createElement('span');
      label.className = 'label';
      label.textContent = name === 'dead' ? 'dead store' : name;
      const value = document.createElement('span');
      value.className = 'value';
      const detail = document.createElement('span');
      detail.className = 'detail';
      if (a) {
        value.textContent = String(a.records);
        value.dataset.records = String(a.records);
        detail.textContent = a.bytes + ' B, oldest ' + age(a.oldest_age_s) + ', newest ' + age(a.newest_age_s) +
          (a.damaged ? ', ' + a.damaged + ' damaged' : '');
      } else {
        value.textContent = 'none';
        detail.textContent = 'set restore.max_restores';
      }
      tile.append(label, value, detail);
      box.append(tile);
    }
    if (sum.stream) {
      const p = $('dlq-stream');
      p.hidden = false;
      p.textContent = 'Stream ' + sum.stream.key + ': ' + sum.stream.pending + ' pending' +
        sum.stream.consumers.map(c => ', ' + c.name + ' ' + c.pending).join('');
    } else {
      $('dlq-stream').hidden = true;
    }
    const r = sum.redrive, prog = $('dlq-progress');
    prog.hidden = !r;
    if (r) {
      prog.textContent = 'Redrive from ' + r.area + (r.all ? ' (all)' : ' (selected)') + ' at ' + r.rate +
        '/s: ' + r.state + ', ' + r.moved + ' of ' + r.total + ' moved' +
        (r.skipped ? ', ' + r.skipped + ' skipped' : '') + ' in ' + r.elapsed_s.toFixed(1) + ' s' +
        (r.error ? ': ' + r.error : '');
      prog.dataset.state = r.state;
    }
    const running = Boolean(r && r.state === 'running');
    const area = $('dlq-area').value;
    $('dlq-redrive-sel').disabled = running || area === 'dump' || st.selected.size === 0;
    $('dlq-redrive-all').disabled = running || area === 'dump';
    $('dlq-purge').disabled = running || !sum.areas.dead;
  }

  function cell(text, cls) {
    const td = document.createElement('td');
    td.textContent = text;
    if (cls) td.className = cls;
    return td;
  }

  function drawRecords(recs) {
    const locs = recs.map(r => r.loc).join('\n');
    $('dlq-page').textContent = 'page ' + st.page;
    $('dlq-prev').disabled = st.page <= 1;
    $('dlq-next').disabled = recs.length < st.perPage;
    if (locs === st.shown) return;
    st.shown = locs;
    const body = $('dlq-table').tBodies[0];
    body.replaceChildren();
    const here = new Set(recs.map(r => r.loc));
    for (const l of Array.from(st.selected)) if (!here.has(l)) st.selected.delete(l);
    for (const r of recs) {
      const tr = document.createElement('tr');
      const box = document.createElement('input');
      box.type = 'checkbox';
      box.value = r.loc;
      box.checked = st.selected.has(r.loc);
      box.disabled = r.state !== 'ok';
      box.setAttribute('aria-label', 'select ' + r.loc);
      box.addEventListener('change', () => {
        if (box.checked) st.selected.add(r.loc); else st.selected.delete(r.loc);
        if (st.summary) drawAreas(st.summary);
      });
      const td = document.createElement('td');
      td.append(box);
      const pv = r.preview ? (r.preview.kind === 'hex' ? '0x' : '') + r.preview.value + (r.preview.truncated ? '…' : '') : r.damage;
      tr.append(td, cell(r.loc, 'loc'), cell(age(r.age_s)), cell(r.state === 'ok' ? r.reason : r.state),
        cell(String(r.attempts)), cell(String(r.rc)), cell(String(r.restores)), cell(pv, 'preview'));
      body.append(tr);
    }
    $('dlq-empty').hidden = recs.length > 0;
  }

  async function refresh() {
    clearTimeout(st.timer);
    const key = D.state.key;
    if (key !== st.key) {
      st.key = key;
      st.page = 1;
      st.shown = '';
      st.selected.clear();
    }
    if (key && !document.hidden && !st.busy) {
      st.busy = true;
      try {
        await load(key);
      } finally {
        st.busy = false;
      }
    }
    if (!key) $('dlq').hidden = true;
    st.timer = setTimeout(refresh, POLL_MS);
  }

  async function load(key) {
    const k = encodeURIComponent(key);
    const res = await D.call('/api/v1/dlq?key=' + k);
    if (key !== st.key) return;
    if (!res.ok) {
      D.state.deadRecords = null;
      $('dlq').hidden = true; /* no dump (409), or gone (404): nothing to show */
      return;
    }
    $('dlq').hidden = false;
    $('dlq-key').textContent = key;
    st.summary = res.body;
    /* The dump chart's dead-store line (dashboard.js). */
    const deadArea = res.body.areas && res.body.areas.dead;
    D.state.deadRecords = deadArea ? deadArea.records : null;
    const area = $('dlq-area').value;
    const link = $('dlq-download');
    link.href = '/api/v1/dlq/download?key=' + k + '&area=' + area;
    link.setAttribute('download', key + '.' + area + '.jsonl');
    if (area === 'dead' && !res.body.areas.dead) {
      drawAreas(res.body);
      drawRecords([]);
      return;
    }
    const recs = await D.call('/api/v1/dlq/records?key=' + k + '&area=' + area + '&page=' + st.page +
      '&per_page=' + st.perPage + '&order=' + $('dlq-order').value);
    if (key !== st.key) return;
    if (!recs.ok) {
      D.say(D.explain('Reading the records of ' + area, recs), 'error');
      return;
    }
    drawRecords(recs.body.records);
    drawAreas(res.body);
  }

  function rate() {
    const v = Number($('dlq-rate').value);
    return v > 0 && v <= 100000 ? v : null;
  }

  async function post(what, body, done) {
    const key = st.key;
    const res = await D.call('/api/v1/dlq/' + what + '?key=' + encodeURIComponent(key),
      { method: 'POST', body: JSON.stringify(body) });
    if (!res.ok) {
      D.say(D.explain(done.fail, res), 'error');
      return null;
    }
    D.say(done.ok(res.body), 'ok');
    st.shown = '';
    refresh();
    return res.body;
  }

  async function redrive(all) {
    const r = rate();
    if (r === null) {
      D.say('Rate: enter records per second, more than 0 and at most 100000.', 'error');
      return;
    }
    const area = $('dlq-area').value;
    const body = all ? { area, all: true, rate: r } : { area, locs: Array.from(st.selected), rate: r };
    const n = all ? 'all' : String(st.selected.size);
    const ok = await post('redrive', body, {
      fail: 'Redriving ' + n + ' records of ' + area,
      ok: b => 'Redriving ' + b.redrive.total + ' records of ' + area + ' at ' + r + '/s.'
    });
    if (ok) st.selected.clear();
  }

  async function purge() {
    const dead = st.summary && st.summary.areas.dead;
    if (!window.confirm('Delete all ' + (dead ? dead.records : '') + ' records of the dead store of "' +
      st.key + '"? They cannot be brought back.')) return;
    await post('purge', { area: 'dead', all: true }, {
      fail: 'Purging the dead store',
      ok: b => 'Purged the dead store: ' + b.records + ' records deleted.'
    });
  }

  function turn(d) {
    st.page = Math.max(1, st.page + d);
    st.shown = '';
    refresh();
  }

  function reset() {
    st.page = 1;
    st.shown = '';
    st.selected.clear();
    refresh();
  }

  $('dlq-area').addEventListener('change', reset);
  $('dlq-order').addEventListener('change', reset);
  $('dlq-prev').addEventListener('click', () => turn(-1));
  $('dlq-next').addEventListener('click', () => turn(1));
  $('dlq-redrive-sel').addEventListener('click', () => redrive(false));
  $('dlq-redrive-all').addEventListener('click', () => redrive(true));
  $('dlq-purge').addEventListener('click', purge);
  $('queue-select').addEventListener('change', () => refresh());
  document.addEventListener('visibilitychange', () => { if (!document.hidden) refresh(); });
  D.dlq = st;
  refresh();
})();
