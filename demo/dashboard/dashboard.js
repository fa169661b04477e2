/*
 * The dashboard: lists the queues (/api/v1/list), polls the chosen one's
 * numbers once a second (/api/v1/stats?key=K), turns counters into
 * per-second rates and feeds the charts; the controls call the same API
 * as demo/requests/*.sh. Everything the API refuses is shown in words.
 *
 * window.blqDashboard exposes the charts and samples (for the browser
 * test and for anyone poking at the page from the console).
 */
'use strict';

(function () {
  const { LineChart, formatValue } = window.BlqCharts;
  const POLL_MS = 1000, LIST_MS = 5000, TIMEOUT_MS = 4000;
  const $ = id => document.getElementById(id);

  const state = {
    key: '',          /* the queue watched */
    prev: null,       /* the previous stats sample of that queue */
    samples: [],      /* derived samples, the last 120 */
    presets: {},
    busy: false,      /* a control request is in flight */
    pollTimer: 0,
    listTimer: 0
  };

  /* ---- talking to the daemon ------------------------------------------ */

  /* Calls the API; resolves {ok, status, body} and never throws: a failure
   * to reach the daemon comes back as status 0 with a message. */
  async function call(path, opts = {}) {
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(), opts.timeout || TIMEOUT_MS);
    try {
      const r = await fetch(path, { method: opts.method || 'GET', body: opts.body, signal: ctl.signal,
        headers: opts.body ? { 'Content-Type': 'application/json' } : undefined, cache: 'no-store' });
      let body = null;
      try { body = await r.json(); } catch (e) { body = null; }
      return { ok: r.ok, status: r.status, body };
    } catch (e) {
      const why = e.name === 'AbortError' ? 'it did not answer in time' : 'the connection failed';
      return { ok: false, status: 0, body: { error: 'cannot reach blq-demo at ' + location.host + ' (' + why + '); is it still running?' } };
    } finally {
      clearTimeout(timer);
    }
  }

  /* The API's refusal in plain words: its own "error" text, with what was tried. */
  function explain(what, res) {
    const why = (res.body && res.body.error) || ('HTTP ' + res.status);
    return what + ' failed: ' + why + (res.status ? ' (HTTP ' + res.status + ')' : '');
  }

  function say(text, kind) {
    const m = $('message');
    m.textContent = text;
    m.className = 'message ' + (kind || 'info');
    m.hidden = !text;
  }

  /* ---- the queue list ------------------------------------------------- */

  async function refreshList() {
    clearTimeout(state.listTimer);
    state.listTimer = setTimeout(refreshList, LIST_MS);
    const res = await call('/api/v1/list');
    if (!res.ok) return; /* the poll reports an unreachable daemon */
    let queues = [];
    try { queues = JSON.parse(res.body.message || '[]'); } catch (e) { queues = []; }
    const keys = queues.map(q => q.key).sort();
    const sel = $('queue-select');
    const have = Array.from(sel.options).map(o => o.value).filter(Boolean);
    if (keys.join('\n') !== have.join('\n')) {
      sel.replaceChildren();
      if (keys.length === 0) sel.append(new Option('(no queue running)', ''));
      for (const k of keys) sel.append(new Option(k, k));
    }
    if (keys.length === 0) {
      $('init-panel').open = true;
    }
    if (!keys.includes(state.key)) watch(keys[0] || '');
    sel.value = state.key;
  }

  /* ---- polling the chosen queue ---------------------------------------- */

  function watch(key) {
    if (key === state.key) return;
    state.key = key;
    state.prev = null;
    state.samples = [];
    for (const c of Object.values(charts)) if (c) c.clear();
    showOptional(null);
    setControls();
    poll();
  }

  async function poll() {
    clearTimeout(state.pollTimer);
    state.pollTimer = setTimeout(poll, POLL_MS);
    const key = state.key;
    const conn = $('connection');
    if (!key) {
      const res = await call('/api/v1/ping');
      conn.textContent = res.ok ? 'connected' : 'daemon unreachable';
      conn.className = 'connection ' + (res.ok ? 'up' : 'down');
      return;
    }
    const res = await call('/api/v1/stats?key=' + encodeURIComponent(key));
    if (key !== state.key) return; /* switched meanwhile */
    if (res.status === 0) {
      conn.textContent = 'daemon unreachable';
      conn.className = 'connection down';
      return;
    }
    conn.textContent = 'connected';
    conn.className = 'connection up';
    if (res.status === 404) {
      say('Queue "' + key + '" is not running any more.', 'info');
      refreshList();
      return;
    }
    if (!res.ok) {
      say(explain('Reading the numbers of "' + key + '"', res), 'error');
      return;
    }
    feed(res.body);
  }

  /* Per-second rate of a counter between two samples; null on the first
   * sample or after a restart of the key (counters went back). */
  function perSecond(cur, prev, dt, pick) {
    if (!prev || dt <= 0) return null;
    const d = pick(cur) - pick(prev);
    return d < 0 ? null : d / dt;
  }

  function feed(st) {
    const prev = state.prev;
    const dt = prev ? st.t - prev.t : 0;
    const c = st.counters;
    const rate = pick => perSecond(st, prev, dt, pick);
    const s = {
      t: st.t,
      size: st.size, capacity: st.capacity, rate: st.rate,
      wakeup_factor: st.wakeup_factor, sleep_factor: st.sleep_factor,
      workers_active: st.workers.active, workers_asleep: st.workers.asleep, workers_idle: st.workers.idle,
      workers_min: st.workers.min, workers_max: st.workers.max,
      producers_active: st.producers.active, producers_max: st.producers.max,
      in_rate: rate(x => x.counters.in),
      out_rate: rate(x => x.counters.processed + x.counters.failed),
      leak_rate: rate(x => x.counters.leaked),
      lost_rate: rate(x => x.counters.lost),
      retry_rate: rate(x => x.counters.retried),
      deadline_rate: rate(x => x.counters.expired + x.counters.leaked_deadline),
      timeout_rate: rate(x => x.counters.timed_out),
      retried: c.retried, deadline: c.expired + c.leaked_deadline, timed_out: c.timed_out
    };
    state.prev = st;
    state.samples.push(s);
    if (state.samples.length > 120) state.samples.shift();

    charts.size.push(s);
    charts.fill.push(s);
    charts.workers.push(s);
    charts.producers.push(s);
    charts.throughput.push(s);
    charts.retries.push(s);
    showOptional(st);
    if (st.qos) {
      const v = { t: s.t, egress: st.qos.egress.size };
      st.qos.subqs.forEach((q, i) => { v['subq' + i] = q.size; });
      ensureQosChart(st.qos).push(v);
    }
    if (st.dump || st.restore) {
      charts.dump.push({
        t: s.t, written: st.dump ? st.dump.written : null, dropped: st.dump ? st.dump.dropped : null,
        restored: st.restore ? st.restore.restored : null
      });
    }
    for (const el of document.querySelectorAll('[data-metric]')) {
      const v = s[el.dataset.metric];
      el.textContent = el.dataset.metric === 'rate' && typeof v === 'number'
        ? (v * 100).toPrecision(3).replace(/\.?0+$/, '') + ' %' : formatValue(v);
    }
    if (st.stopping) say('Queue "' + state.key + '" is stopping: producers are stopped and the queue drains.', 'info');
  }

  /* ---- charts ---------------------------------------------------------- */

  const chartsEl = $('charts');
  const charts = {
    size: new LineChart(chartsEl, { id: 'size', title: 'Size and capacity (items)', series: [
      { key: 'size', label: 'size' }, { key: 'capacity', label: 'capacity', dash: true, color: '#64748b' }] }),
    fill: new LineChart(chartsEl, { id: 'fill', title: 'Fill rate against the wakeup and sleep factors', series: [
      { key: 'rate', label: 'fill rate' }, { key: 'wakeup_factor', label: 'wakeup', dash: true, color: '#dc2626' },
      { key: 'sleep_factor', label: 'sleep', dash: true, color: '#16a34a' }] }),
    workers: new LineChart(chartsEl, { id: 'workers', title: 'Workers', series: [
      { key: 'workers_active', label: 'active' }, { key: 'workers_asleep', label: 'asleep', color: '#ca8a04' },
      { key: 'workers_idle', label: 'idle slots', color: '#94a3b8' },
      { key: 'workers_max', label: 'max', dash: true, color: '#64748b' }] }),
    producers: new LineChart(chartsEl, { id: 'producers', title: 'Producers', series: [
      { key: 'producers_active', label: 'active', color: '#9333ea' },
      { key: 'producers_max', label: 'max', dash: true, color: '#64748b' }] }),
    throughput: new LineChart(chartsEl, { id: 'throughput', title: 'Items per second', series: [
      { key: 'in_rate', label: 'in' }, { key: 'out_rate', label: 'out', color: '#16a34a' },
      { key: 'leak_rate', label: 'leaked', color: '#ea580c' }, { key: 'lost_rate', label: 'lost', color: '#dc2626' }] }),
    retries: new LineChart(chartsEl, { id: 'retries', title: 'Retries, deadlines and timeouts per second', series: [
      { key: 'retry_rate', label: 'retries' }, { key: 'deadline_rate', label: 'past deadline', color: '#dc2626' },
      { key: 'timeout_rate', label: 'timed out', color: '#ca8a04' }] }),
    dump: new LineChart(chartsEl, { id: 'dump', title: 'Dump and restore (items since start)', series: [
      { key: 'written', label: 'dumped' }, { key: 'dropped', label: 'dropped', color: '#dc2626' },
      { key: 'restored', label: 'restored', color: '#16a34a' }] }),
    qos: null
  };

  /* The QoS chart's series are the queue's own sub-queues, so it is made
   * (again) when a queue with another set of sub-queues is watched. */
  function ensureQosChart(qos) {
    const names = qos.subqs.map(q => q.name).join('\n');
    if (charts.qos && charts.qos.names === names) return charts.qos;
    if (charts.qos) charts.qos.el.remove();
    charts.qos = new LineChart(chartsEl, { id: 'qos', title: 'Sub-queues (QoS, items queued)', series:
      qos.subqs.map((q, i) => ({ key: 'subq' + i, label: q.name }))
        .concat([{ key: 'egress', label: 'egress', dash: true, color: '#64748b' }]) });
    charts.qos.names = names;
    return charts.qos;
  }

  /* Shows the QoS and dump charts only for a queue that has them. */
  function showOptional(st) {
    charts.dump.el.hidden = !(st && (st.dump || st.restore));
    if (charts.qos) charts.qos.el.hidden = !(st && st.qos);
  }

  /* ---- controls -------------------------------------------------------- */

  function setControls() {
    const none = !state.key;
    for (const id of ['btn-up', 'btn-down', 'btn-stop', 'btn-force-stop', 'producer-delta'])
      $(id).disabled = none || (state.busy && id !== 'btn-force-stop');
  }

  function delta() {
    const v = Number($('producer-delta').value);
    if (!Number.isInteger(v) || v < 1 || v > 1024) return null;
    return v;
  }

  async function producers(dir) {
    const d = delta();
    if (d === null) {
      say('Producers ±: enter a whole number from 1 to 1024.', 'error');
      return;
    }
    const key = state.key;
    const res = await call('/api/v1/producer-' + dir + '?key=' + encodeURIComponent(key) + '&delta=' + d,
      { method: 'POST' });
    if (!res.ok) {
      say(explain((dir === 'up' ? 'Raising' : 'Lowering') + ' the producers of "' + key + '" by ' + d, res), 'error');
      return;
    }
    say((dir === 'up' ? 'Raised' : 'Lowered') + ' the producers of "' + key + '" by ' + d + '.', 'ok');
    poll();
  }

  async function stop(force) {
    const key = state.key;
    state.busy = true;
    setControls();
    say((force ? 'Force-stopping' : 'Stopping (draining)') + ' "' + key + '"…', 'info');
    /* A graceful stop drains the queue, which may take long. */
    const res = await call('/api/v1/' + (force ? 'force-stop' : 'stop') + '?key=' + encodeURIComponent(key),
      { method: 'POST', timeout: 10 * 60 * 1000 });
    state.busy = false;
    setControls();
    if (!res.ok) {
      say(explain((force ? 'Force-stopping' : 'Stopping') + ' "' + key + '"', res), 'error');
      return;
    }
    const f = res.body.final;
    say(f ? 'Stopped "' + key + '": in ' + f.in + ' = processed ' + f.processed + ' + failed ' + f.failed +
      ' + leaked ' + f.leaked + ' + expired ' + f.expired + ' + lost ' + f.lost +
      (f.balanced ? ' (balanced).' : ' (NOT balanced).') : 'Stopped "' + key + '".', f && !f.balanced ? 'error' : 'ok');
    refreshList();
  }

  async function init(ev) {
    ev.preventDefault();
    const key = $('init-key').value.trim();
    const text = $('init-config').value;
    if (!/^[A-Za-z0-9_-]{1,63}$/.test(key)) {
      say('Key: use 1 to 63 letters, digits, "_" or "-".', 'error');
      return;
    }
    try {
      JSON.parse(text);
    } catch (e) {
      say('The config is not valid JSON: ' + e.message, 'error');
      return;
    }
    $('init-submit').disabled = true;
    const res = await call('/api/v1/init?key=' + encodeURIComponent(key), { method: 'POST', body: text });
    $('init-submit').disabled = false;
    if (!res.ok) {
      say(explain('Starting "' + key + '"', res), 'error');
      return;
    }
    say('Started "' + key + '".', 'ok');
    $('init-panel').open = false; /* room for the charts */
    await refreshList();
    watch(key);
    $('queue-select').value = key;
  }

  async function loadPresets() {
    const res = await call('/presets.json');
    if (!res.ok || !res.body) return;
    state.presets = res.body;
    const sel = $('preset-select');
    for (const name of Object.keys(state.presets).sort()) sel.append(new Option(name, name));
  }

  function pickPreset() {
    const name = $('preset-select').value;
    if (!name) return;
    $('init-config').value = JSON.stringify(state.presets[name], null, 2);
    $('init-key').value = name;
  }

  $('queue-select').addEventListener('change', e => watch(e.target.value));
  $('btn-up').addEventListener('click', () => producers('up'));
  $('btn-down').addEventListener('click', () => producers('down'));
  $('btn-stop').addEventListener('click', () => stop(false));
  $('btn-force-stop').addEventListener('click', () => stop(true));
  $('init-form').addEventListener('submit', init);
  $('preset-select').addEventListener('change', pickPreset);

  window.blqDashboard = { charts, state };
  setControls();
  showOptional(null);
  loadPresets();
  refreshList();
  poll();
})();
