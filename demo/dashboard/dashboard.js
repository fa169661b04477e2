/*
 * The dashboard: lists the queues (/api/v1/list), polls the chosen one's
 * numbers once a second (/api/v1/stats?key=K), turns counters into
 * per-second rates and feeds the charts; the controls call the same API
 * as demo/requests/*.sh. Everything the API refuses is shown in words.
 *
 * History: the daemon keeps each key's last 5 minutes of samples, a second
 * apart (/api/v1/history?key=K, demo/history.h). Before the first live
 * sample of a run of a key (the page opened, another queue chosen, the key
 * started again) the page draws those, so a page opened mid-run shows the
 * run so far. History and live samples join by time: a sample less than
 * half a second newer than the last one drawn is dropped, so none is drawn
 * twice and no rate is taken over a few milliseconds.
 *
 * Polling: one request at a time (the next starts a second after the last
 * began, once it has answered), so a slow daemon gets no pile of requests
 * and samples arrive in order; switching queues aborts the one in flight.
 * A sample of another run of the key (its "instance" changed: stopped and
 * started again, or the daemon restarted) starts the charts afresh, from
 * that run's history.
 *
 * window.blqDashboard exposes the charts and samples (for the browser
 * test and for anyone poking at the page from the console).
 */
'use strict';

(function () {
  const { LineChart, formatValue, formatPercent } = window.BlqCharts;
  const POLL_MS = 1000, LIST_MS = 5000, TIMEOUT_MS = 4000;
  const SPAN_S = 300; /* the charts' window: what the daemon keeps (DEMO_HISTORY_SAMPLES) */
  const $ = id => document.getElementById(id);

  const state = {
    key: '',            /* the queue watched */
    prev: null,         /* the previous stats sample of that run of the key */
    samples: [],        /* derived samples, the last SPAN_S seconds' */
    needHistory: true,  /* the charts are empty: draw the daemon's history first */
    presets: {},
    stopping: new Set(),/* keys whose stop this page has sent and not seen end */
    stoppedHere: new Set(),/* keys this page stopped: their 404 is no news */
    gen: 0,             /* bumped by watch(): answers of an older poll are dropped */
    pollCtl: null,      /* aborts the poll in flight */
    pollTimer: 0,
    listTimer: 0,
    listedOnce: false,
    deadRecords: null   /* records in the watched key's dead store (dlq.js), or null */
  };

  /* ---- talking to the daemon ------------------------------------------ */

  /* Calls the API; resolves {ok, status, body, aborted} and never throws: a
   * failure to reach the daemon comes back as status 0 with a message.
   * opts.timeout: ms before giving up (0: never); opts.signal: aborts it. */
  async function call(path, opts = {}) {
    const ctl = new AbortController();
    const limit = opts.timeout === undefined ? TIMEOUT_MS : opts.timeout;
    const timer = limit ? setTimeout(() => ctl.abort(), limit) : 0;
    const onAbort = () => ctl.abort();
    if (opts.signal) opts.signal.addEventListener('abort', onAbort);
    try {
      const r = await fetch(path, { method: opts.method || 'GET', body: opts.body, signal: ctl.signal,
        headers: opts.body ? { 'Content-Type': 'application/json' } : undefined, cache: 'no-store' });
      let body = null;
      try { body = await r.json(); } catch (e) { body = null; }
      return { ok: r.ok, status: r.status, body };
    } catch (e) {
      const aborted = Boolean(opts.signal && opts.signal.aborted);
      const why = e.name === 'AbortError' ? 'it did not answer in time' : 'the connection failed';
      return { ok: false, status: 0, aborted,
        body: { error: 'cannot reach blq-demo at ' + location.host + ' (' + why + '); is it still running?' } };
    } finally {
      clearTimeout(timer);
      if (opts.signal) opts.signal.removeEventListener('abort', onAbort);
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

  function setConnection(up) {
    const conn = $('connection');
    conn.textContent = up ? 'connected' : 'daemon unreachable';
    conn.className = 'connection ' + (up ? 'up' : 'down');
  }

  /* ---- the queue list ------------------------------------------------- */

  async function refreshList() {
    const res = await call('/api/v1/list');
    clearTimeout(state.listTimer); /* one timer, however many calls ran */
    state.listTimer = setTimeout(refreshList, LIST_MS);
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
    if (keys.length === 0 && !state.listedOnce) $('init-panel').open = true; /* a first visit */
    state.listedOnce = true;
    if (!keys.includes(state.key)) watch(keys[0] || '');
    sel.value = state.key;
  }

  /* ---- polling the chosen queue ---------------------------------------- */

  function clearCharts() {
    state.prev = null;
    state.samples = [];
    state.needHistory = true;
    state.deadRecords = null;
    for (const c of Object.values(charts)) if (c) c.clear();
    showOptional(null);
  }

  /* Watches @key. A switch by hand clears the message; an automatic one
   * (the watched queue went away) keeps it, e.g. a stop's accounting. */
  function watch(key, byHand) {
    if (key === state.key) return;
    state.key = key;
    if (byHand) say('');
    clearCharts();
    setControls();
    state.gen++;
    clearTimeout(state.pollTimer);
    if (state.pollCtl) state.pollCtl.abort();
    pollLoop(state.gen);
  }

  async function pollLoop(gen) {
    const began = performance.now();
    await pollOnce(gen);
    if (gen !== state.gen) return; /* watch() started another loop */
    state.pollTimer = setTimeout(() => pollLoop(gen), Math.max(100, POLL_MS - (performance.now() - began)));
  }

  async function pollOnce(gen) {
    const key = state.key;
    if (!key) {
      setConnection((await call('/api/v1/ping')).ok);
      return;
    }
    state.pollCtl = new AbortController();
    const res = await call('/api/v1/stats?key=' + encodeURIComponent(key), { signal: state.pollCtl.signal });
    if (gen !== state.gen || res.aborted) return; /* switched meanwhile */
    setConnection(res.status !== 0);
    if (res.status === 0) return;
    if (res.status === 404) {
      clearCharts();
      if (!state.stoppedHere.delete(key)) say('Queue "' + key + '" is not running any more.', 'info');
      refreshList();
      return;
    }
    if (!res.ok) {
      say(explain('Reading the numbers of "' + key + '"', res), 'error');
      return;
    }
    if (state.prev && res.body.instance !== state.prev.instance) clearCharts(); /* another run */
    if (state.needHistory && !(await loadHistory(gen, key))) return;
    feed(res.body);
  }

  /* Draws the run's samples so far (the daemon's history of @key), before
   * the live one that follows. Return: false when the poll should stop
   * here (switched meanwhile, or the daemon unreachable: tried again at
   * the next poll). */
  async function loadHistory(gen, key) {
    const res = await call('/api/v1/history?key=' + encodeURIComponent(key), { signal: state.pollCtl.signal });
    if (gen !== state.gen || res.aborted) return false;
    if (res.status === 0) {
      setConnection(false);
      return false;
    }
    state.needHistory = false;
    if (!res.ok || !res.body || !Array.isArray(res.body.samples)) return true; /* the live poll tells */
    for (const x of res.body.samples) feed(Object.assign({ instance: res.body.instance }, x), true);
    for (const c of Object.values(charts)) if (c) c.draw();
    return true;
  }

  /* Per-second rate of a counter between two samples; null on the first. */
  function perSecond(cur, prev, pick) {
    const dt = prev ? cur.t - prev.t : 0;
    return dt > 0 ? Math.max(0, pick(cur) - pick(prev)) / dt : null;
  }

  /* Draws one stats sample (or a history one, in the same shape); @quiet:
   * the canvases are drawn later, once for a whole history. */
  function feed(st, quiet) {
    const prev = state.prev;
    if (prev && st.instance !== prev.instance) {
      clearCharts(); /* another run of the key: the next poll draws its history */
      return;
    }
    /* Not newer than what is drawn, or too close after it to make a rate
     * of: the first live poll can land a few ms after the history's last
     * sample, and a rate over those ms reads as a dip to 0. */
    if (prev && st.t < prev.t + 0.5) return;
    const c = st.counters;
    const rate = pick => perSecond(st, prev, pick);
    const s = {
      t: st.t,
      size: st.size, capacity: st.capacity, rate: st.rate,
      wakeup_factor: st.wakeup_factor, sleep_factor: st.sleep_factor,
      workers_active: st.workers.active, workers_asleep: st.workers.asleep, workers_idle: st.workers.idle,
      workers_min: st.workers.min, workers_max: st.workers.max,
      workers_busy: st.workers.busy, workers_overrunning: st.workers.overrunning,
      workers_stuck: st.workers.stuck, producers_blocked: st.producers_blocked,
      producers_active: st.producers.active, producers_max: st.producers.max,
      in_rate: rate(x => x.counters.in),
      out_rate: rate(x => x.counters.processed + x.counters.failed),
      leak_rate: rate(x => x.counters.leaked),
      /* The same leaks by reason (they add up to leak_rate): overflow at
       * the rear or the front, failed (fail_to_dlq), past the deadline
       * (deadline_to_dlq), left at a stop. */
      leak_rear_rate: rate(x => x.counters.leaked_rear),
      leak_front_rate: rate(x => x.counters.leaked_front),
      leak_failed_rate: rate(x => x.counters.leaked_failed),
      leak_deadline_rate: rate(x => x.counters.leaked_deadline),
      leak_closed_rate: rate(x => x.counters.leaked_closed),
      dlq_waiting: st.dlq_waiting,
      lost_rate: rate(x => x.counters.lost),
      retry_rate: rate(x => x.counters.retried),
      deadline_rate: rate(x => x.counters.expired + x.counters.leaked_deadline),
      timeout_rate: rate(x => x.counters.timed_out),
      retried: c.retried, deadline: c.expired + c.leaked_deadline, timed_out: c.timed_out
    };
    state.prev = st;
    state.samples.push(s);
    while (s.t - state.samples[0].t > SPAN_S) state.samples.shift();

    for (const id of ['size', 'fill', 'workers', 'producers', 'throughput', 'leaks', 'retries']) charts[id].push(s, !quiet);
    charts.retries.setNote('since start: ' + formatValue(s.retried) + ' retries, ' + formatValue(s.deadline) +
      ' past their deadline, ' + formatValue(s.timed_out) + ' timed out');
    showOptional(st);
    if (st.qos) {
      const v = { t: s.t, egress: st.qos.egress.size };
      st.qos.subqs.forEach((q, i) => { v['subq' + i] = q.size; });
      ensureQosChart(st.qos).push(v, !quiet);
    }
    if (st.dump || st.restore) {
      charts.dump.push({
        t: s.t, written: st.dump ? st.dump.written : null, dropped: st.dump ? st.dump.dropped : null,
        restored: st.restore ? st.restore.restored : null,
        /* Records in the key's dead store, as the DLQ section last read it
         * (dlq.js; /api/v1/dlq): none in a history sample. */
        dead: quiet ? null : state.deadRecords
      }, !quiet);
    }
    for (const el of document.querySelectorAll('[data-metric]')) {
      const v = s[el.dataset.metric];
      el.textContent = el.dataset.metric === 'rate' ? formatPercent(v) : formatValue(v);
    }
    setControls();
    if (st.stopping && !state.stopping.has(state.key))
      say('Queue "' + state.key + '" is stopping: its producers are stopped and it drains.', 'info');
  }

  /* ---- charts ---------------------------------------------------------- */

  const chartsEl = $('charts');
  const chart = opts => new LineChart(chartsEl, Object.assign({ span: SPAN_S }, opts));
  const charts = {
    size: chart({ id: 'size', title: 'Size and capacity (items)', series: [
      { key: 'size', label: 'size' }, { key: 'capacity', label: 'capacity', dash: true, color: '#64748b' }] }),
    fill: chart({ id: 'fill', title: 'Fill rate against the wakeup and sleep factors', series: [
      { key: 'rate', label: 'fill rate' }, { key: 'wakeup_factor', label: 'wakeup', dash: true, color: '#dc2626' },
      { key: 'sleep_factor', label: 'sleep', dash: true, color: '#16a34a' }] }),
    workers: chart({ id: 'workers', title: 'Workers', series: [
      { key: 'workers_active', label: 'active' }, { key: 'workers_asleep', label: 'asleep', color: '#ca8a04' },
      { key: 'workers_idle', label: 'idle slots', color: '#94a3b8' },
      { key: 'workers_max', label: 'max', dash: true, color: '#64748b' }] }),
    producers: chart({ id: 'producers', title: 'Producers', series: [
      { key: 'producers_active', label: 'active', color: '#9333ea' },
      { key: 'producers_max', label: 'max', dash: true, color: '#64748b' }] }),
    throughput: chart({ id: 'throughput', title: 'Items per second', series: [
      { key: 'in_rate', label: 'in' }, { key: 'out_rate', label: 'out', color: '#16a34a' },
      { key: 'leak_rate', label: 'leaked', color: '#ea580c' }, { key: 'lost_rate', label: 'lost', color: '#dc2626' }] }),
    leaks: chart({ id: 'leaks', title: 'Leaks per second by reason', series: [
      { key: 'leak_rear_rate', label: 'overflow rear', color: '#ea580c' },
      { key: 'leak_front_rate', label: 'overflow front', color: '#ca8a04' },
      { key: 'leak_failed_rate', label: 'failed', color: '#dc2626' },
      { key: 'leak_deadline_rate', label: 'deadline', color: '#9333ea' },
      { key: 'leak_closed_rate', label: 'closed', color: '#64748b' }] }),
    retries: chart({ id: 'retries', title: 'Retries, deadlines and timeouts per second', series: [
      { key: 'retry_rate', label: 'retries' }, { key: 'deadline_rate', label: 'past deadline', color: '#dc2626' },
      { key: 'timeout_rate', label: 'timed out', color: '#ca8a04' }] }),
    dump: chart({ id: 'dump', title: 'Dump and restore (items since start)', series: [
      { key: 'written', label: 'dumped' }, { key: 'dropped', label: 'dropped', color: '#dc2626' },
      { key: 'restored', label: 'restored', color: '#16a34a' },
      { key: 'dead', label: 'dead store', color: '#7f1d1d', dash: true }] }),
    qos: null
  };

  /* The QoS chart's series are the queue's own sub-queues, so it is made
   * (again) when a queue with another set of sub-queues is watched. */
  function ensureQosChart(qos) {
    const names = qos.subqs.map(q => q.name).join('\n');
    if (charts.qos && charts.qos.names === names) return charts.qos;
    if (charts.qos) charts.qos.el.remove();
    charts.qos = chart({ id: 'qos', title: 'Sub-queues (QoS, items queued)', series:
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

  /* With no queue, nothing; while the watched queue stops (by this page or
   * anyone), only force stop, which turns the drain into a force close. */
  function setControls() {
    const none = !state.key;
    const stopping = state.stopping.has(state.key) || Boolean(state.prev && state.prev.stopping);
    for (const id of ['btn-up', 'btn-down', 'btn-stop', 'producer-delta'])
      $(id).disabled = none || stopping;
    $('btn-force-stop').disabled = none;
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
  }

  async function stop(force) {
    const key = state.key;
    state.stopping.add(key);
    setControls();
    say((force ? 'Force-stopping' : 'Stopping (draining)') + ' "' + key + '"…', 'info');
    /* A graceful stop drains the queue, which may take long: no time limit. */
    const res = await call('/api/v1/' + (force ? 'force-stop' : 'stop') + '?key=' + encodeURIComponent(key),
      { method: 'POST', timeout: 0 });
    state.stopping.delete(key);
    setControls();
    if (res.ok) state.stoppedHere.add(key);
    if (key !== state.key && res.ok) return; /* the list shows it gone */
    if (!res.ok) {
      say(explain((force ? 'Force-stopping' : 'Stopping') + ' "' + key + '"', res), 'error');
      return;
    }
    const f = res.body.final;
    say(f ? 'Stopped "' + key + '": in ' + f.in + ' = processed ' + f.processed + ' + failed ' + f.failed +
      ' + leaked ' + f.leaked + ' + expired ' + f.expired + ' + lost ' + f.lost +
      ' + cancelled ' + f.cancelled +
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
    $('init-panel').open = false; /* room for the charts */
    await refreshList();
    watch(key, true);
    $('queue-select').value = key;
    say('Started "' + key + '".', 'ok');
  }

  async function loadPresets() {
    const res = await call('/presets.json');
    if (!res.ok || !res.body) {
      say(explain('Loading the presets', res), 'error');
      return;
    }
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

  $('queue-select').addEventListener('change', e => watch(e.target.value, true));
  $('btn-up').addEventListener('click', () => producers('up'));
  $('btn-down').addEventListener('click', () => producers('down'));
  $('btn-stop').addEventListener('click', () => stop(false));
  $('btn-force-stop').addEventListener('click', () => stop(true));
  $('init-form').addEventListener('submit', init);
  $('preset-select').addEventListener('change', pickPreset);

  /* dlq.js (the DLQ section) talks to the daemon through these too. */
  window.blqDashboard = { charts, state, call, explain, say };
  setControls();
  showOptional(null);
  loadPresets();
  refreshList();
  pollLoop(state.gen);
})();
