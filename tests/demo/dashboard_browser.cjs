#!/usr/bin/env node
/*
 * The dashboard in a real browser: Debian's chromium, driven by
 * playwright-core. Starts blq-demo on free ports; a page opened 5.5 s into
 * a queue's run draws that run at once (the daemon's history) and goes on
 * live; then inits a scenario from the page's form, raises the producers
 * with the button, and asserts that the charts show a non-zero in-rate and
 * a worker count that rose; checks that errors are shown in words, that
 * the page fits a 400 px window, and that nothing is fetched from anywhere
 * but the daemon; the DLQ section of a key with a dead store: counts, a
 * page of records with reasons, two redriven, a download, a purge.
 * Screenshots go to OUTDIR.
 *
 * usage: dashboard_browser.cjs BLQ_DEMO OUTDIR
 * env:   BLQ_NODE_MODULES  where playwright-core is installed
 *                          (default: build/node/node_modules of the checkout)
 *        CHROMIUM          the browser (default /usr/bin/chromium)
 *        BLQ_DASHBOARD_REQUIRE=1  fail instead of skipping without them
 *        BLQ_DASHBOARD_HISTORY_S  seconds of history before the screenshot
 *                          (default 2; docs/dashboard.png used 40)
 * Exit 77 (ctest's skip) when there is no browser or no playwright-core,
 * unless BLQ_DASHBOARD_REQUIRE=1.
 */
'use strict';

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

const SKIP = 77;
const [demoBin, outDir] = process.argv.slice(2);
if (!demoBin || !outDir) {
  console.error('usage: dashboard_browser.cjs BLQ_DEMO OUTDIR');
  process.exit(2);
}
const chromium = process.env.CHROMIUM || '/usr/bin/chromium';
const modules = process.env.BLQ_NODE_MODULES ||
  path.join(__dirname, '..', '..', 'build', 'node', 'node_modules');

/* Skips only where there is no browser to run; once scripts/test.sh has
 * installed one (BLQ_DASHBOARD_REQUIRE=1) a missing piece is a failure. */
function cannotRun(why) {
  const required = process.env.BLQ_DASHBOARD_REQUIRE === '1';
  console.log(`${required ? 'FAIL' : 'SKIP'}: ${why}`);
  process.exit(required ? 1 : SKIP);
}
if (!fs.existsSync(chromium))
  cannotRun(`no browser at ${chromium} (scripts/test.sh installs Debian's chromium)`);
let pw;
try {
  pw = require(path.join(modules, 'playwright-core'));
} catch (e) {
  cannotRun(`playwright-core not found in ${modules} (scripts/test.sh installs it with npm ci)`);
}

let failures = 0;
function check(cond, what) {
  console.log(`${cond ? 'ok  ' : 'FAIL'} ${what}`);
  if (!cond) failures++;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

const sleep = ms => new Promise(r => setTimeout(r, ms));

async function until(what, fn, ms) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(200);
  }
}

async function main() {
  fs.mkdirSync(outDir, { recursive: true });
  const api = await freePort(), metrics = await freePort();
  const dumpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'blq-dashboard-'));
  const base = `http://127.0.0.1:${api}`;
  const daemon = spawn(demoBin, ['-l', `127.0.0.1:${api}`, '-m', `127.0.0.1:${metrics}`, '-d', dumpDir,
    '-L', 'warn'], { stdio: ['ignore', 'inherit', 'inherit'] });
  const exited = new Promise(r => daemon.on('exit', (code, sig) => r({ code, sig })));
  let browser;
  try {
    await until('the daemon to answer ping', async () => {
      try { return (await fetch(`${base}/api/v1/ping`)).ok; } catch (e) { return false; }
    }, 10000);

    browser = await pw.chromium.launch({
      executablePath: chromium,
      /* The closed network here refuses Chromium's background traffic. */
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync']
    });
    const foreign = [], pageErrors = [];
    const newPage = async () => {
      const p = await browser.newPage({ viewport: { width: 1280, height: 800 } });
      p.on('request', r => {
        const u = new URL(r.url());
        if (u.origin !== base && u.protocol !== 'data:') foreign.push(r.url());
      });
      p.on('pageerror', e => pageErrors.push(String(e)));
      p.on('console', m => { if (m.type() === 'error') pageErrors.push(m.text()); });
      return p;
    };
    const api = (path, body) => fetch(base + path, { method: 'POST', body });

    /* A page opened mid-run: "early" runs 5.5 s before any page is open;
     * the page draws those seconds at once from the daemon's history
     * (/api/v1/history), then live samples follow with none repeated and
     * no gap at the join. The chart's own data is read, not its pixels. */
    check((await api('/api/v1/init?key=early', JSON.stringify({ capacity: 1000, workers_min: 1,
      workers_max: 2, worker_delay: 100000, producers_min: 2, producers_max: 2,
      producer_delay: 5000000 }))).ok, 'init "early" (2 producers, 400 items/s) before any page is open');
    await sleep(5500);
    const early = await newPage();
    await early.goto(base + '/');
    const opened = Date.now();
    const times = () => early.evaluate(() => window.blqDashboard.charts.size.times.slice());
    await early.waitForFunction(() => window.blqDashboard.charts.size.times.length >= 4, null,
      { timeout: 1000, polling: 50 }).catch(() => {});
    const first = await times(), firstMs = Date.now() - opened;
    check(first.length >= 4 && firstMs <= 1000,
      `opened 5.5 s into the run, the size chart has ${first.length} points after ${firstMs} ms (want >= 4 within 1 s)`);
    check(await early.locator('#queue-select').inputValue() === 'early', 'the page watches "early"');
    check(first.length > 0 && first[first.length - 1] - first[0] >= 3.5,
      `the points span the run so far: ${first.length ? (first[first.length - 1] - first[0]).toFixed(2) : 0} s`);
    const inRates = await early.evaluate(() =>
      window.blqDashboard.charts.throughput.series.find(x => x.key === 'in_rate').values.slice());
    check(inRates.length >= 4 && inRates.slice(1, first.length).every(v => v > 0),
      `the in-rate is drawn from the history's second sample on: ${inRates.slice(0, first.length).map(v => v === null ? '-' : Math.round(v)).join(' ')}`);
    await until('the chart to keep growing live', async () => (await times()).length >= first.length + 3, 6000);
    const all = await times();
    const steps = all.slice(1).map((t, i) => t - all[i]);
    check(all[0] === first[0] && steps.every(d => d > 0 && d < 1.6),
      `history then live: ${all.length} points, no repeat and no gap (steps ${steps.map(d => d.toFixed(2)).join(' ')} s)`);
    const shotHistory = path.join(outDir, 'dashboard-history.png');
    await early.screenshot({ path: shotHistory });
    console.log(`screenshot: ${shotHistory}`);
    await early.close();
    check((await api('/api/v1/stop?key=early')).ok, 'stop "early"');

    const page = await newPage();
    await page.goto(base + '/');
    await page.waitForSelector('#preset-select option[value="demo100k"]', { state: 'attached' });
    check(await page.locator('#init-panel').evaluate(d => d.open), 'with no queue running, the init form is open');
    const presets = await page.locator('#preset-select option').allTextContents();
    check(['demo100k', 'demo100k_de', 'demo100k_dump', 'demo100k_sched', 'demoQoS']
      .every(p => presets.includes(p)), `the presets of demo/requests are offered: ${presets.join(', ')}`);

    const say = () => page.locator('#message').textContent();
    /* Unfolds "Start a queue" the way a user does, unless it is open. */
    const openInitForm = async () => {
      if (!(await page.locator('#init-panel').evaluate(d => d.open)))
        await page.locator('#init-panel summary').click();
    };
    const sayClass = () => page.locator('#message').getAttribute('class');

    /* Bad input is refused in words before or by the API. */
    await page.fill('#init-key', 'browser');
    await page.fill('#init-config', '{"capacity": 10,');
    await page.click('#init-submit');
    check(/not valid JSON/.test(await say()) && /error/.test(await sayClass()),
      `broken JSON is named: "${await say()}"`);
    await page.fill('#init-config', '{"capacity": "many"}');
    await page.click('#init-submit');
    await until('the API refusal', async () => /HTTP 400/.test(await say()), 5000);
    check(/capacity/.test(await say()), `the API's 400 names the field: "${await say()}"`);

    /* demo100k from the preset, with 2 ms of work per item instead of
     * 0.3 ms: its 2 workers then keep up with the 4 starting producers
     * (800 items/s) but not with 20, so raising the producers must make
     * the balancer add workers. */
    await page.selectOption('#preset-select', 'demo100k');
    check(await page.inputValue('#init-key') === 'demo100k', 'the preset fills in its key');
    const cfg = JSON.parse(await page.inputValue('#init-config'));
    check(cfg.capacity === 100000 && cfg.producers_min === 4, 'the preset fills in its config');
    cfg.worker_delay = 2000000;
    await page.fill('#init-config', JSON.stringify(cfg, null, 2));
    await page.click('#init-submit');
    await until('"Started"', async () => /Started "demo100k"/.test(await say()), 5000);
    check(await page.locator('#queue-select').inputValue() === 'demo100k', 'the new queue is selected');

    const chart = (id, fn, key) => page.evaluate(([id, fn, key]) =>
      window.blqDashboard.charts[id][fn](key), [id, fn, key]);
    await until('three samples', () => page.evaluate(() => window.blqDashboard.state.samples.length >= 3), 8000);
    const workersBefore = await chart('workers', 'max', 'workers_active');
    const producersBefore = await chart('producers', 'latest', 'producers_active');
    check(producersBefore === 4, `4 producers before the raise (chart: ${producersBefore})`);

    /* The same key again: the API's 406 in words. */
    check(!(await page.locator('#init-panel').evaluate(d => d.open)), 'a started queue folds the form away');
    await openInitForm();
    await page.click('#init-submit');
    await until('the 406', async () => /HTTP 406/.test(await say()), 5000);
    check(/error/.test(await sayClass()), `a second init of the key is refused: "${await say()}"`);

    /* Lower below producers_min: refused, and said so. */
    await page.fill('#producer-delta', '1');
    await page.click('#btn-down');
    await until('the 409', async () => /HTTP 409/.test(await say()), 5000);
    check(true, `lowering below producers_min is refused: "${await say()}"`);

    await page.fill('#producer-delta', '16');
    await page.click('#btn-up');
    await until('"Raised"', async () => /Raised the producers/.test(await say()), 5000);
    await until('20 producers on the chart',
      async () => await chart('producers', 'latest', 'producers_active') === 20, 8000);

    let inRate = 0, workersAfter = 0;
    try {
      await until('the worker count to rise', async () => {
        inRate = await chart('throughput', 'latest', 'in_rate');
        workersAfter = await chart('workers', 'latest', 'workers_active');
        return inRate > 0 && workersAfter > workersBefore;
      }, 20000);
    } catch (e) { /* reported by the checks below */ }
    check(inRate > 0, `the throughput chart shows a non-zero in-rate: ${inRate}/s`);
    check(workersAfter > workersBefore,
      `the workers chart shows the pool grown: ${workersBefore} -> ${workersAfter} active`);
    const legendIn = await page.locator('#chart-throughput b[data-series="in_rate"]').textContent();
    check(/^[1-9]/.test(legendIn), `the in-rate legend shows a number: ${legendIn}`);
    const tileWorkers = Number(await page.locator('[data-metric="workers_active"]').textContent());
    check(tileWorkers > workersBefore, `the workers tile: ${tileWorkers}`);
    /* Seed 000's gauges: 20 producers keep workers inside their 2 ms
     * callbacks; no item has a time limit, so none is past one or stuck. */
    let busyTile = '';
    try {
      await until('a busy worker on the tile', async () => {
        busyTile = await page.locator('[data-metric="workers_busy"]').textContent();
        return Number(busyTile) >= 1;
      }, 8000);
    } catch (e) { /* reported below */ }
    check(Number(busyTile) >= 1, `the workers-busy tile: ${busyTile}`);
    const overTile = await page.locator('[data-metric="workers_overrunning"]').textContent();
    const stuckTile = await page.locator('[data-metric="workers_stuck"]').textContent();
    check(overTile === '0' && stuckTile === '0', `past limit / stuck tiles: ${overTile} / ${stuckTile}`);
    const blockedTile = await page.locator('[data-metric="producers_blocked"]').textContent();
    check(/^[0-9]+$/.test(blockedTile), `the producers-blocked tile shows a count: ${blockedTile}`);
    check(await page.locator('#chart-dump').isHidden(), 'no dump chart for a queue without a dump');
    check(await page.locator('#chart-qos').count() === 0, 'no QoS chart for a queue without QoS');
    /* More history on the charts before the picture (docs/dashboard.png: 40). */
    await sleep(1000 * Number(process.env.BLQ_DASHBOARD_HISTORY_S || 2));
    await page.evaluate(() => window.scrollTo(0, 0));

    const shot1280 = path.join(outDir, 'dashboard-1280x800.png');
    await page.screenshot({ path: shot1280 });
    console.log(`screenshot: ${shot1280}`);

    /* A narrow window: one column, nothing wider than the window. */
    await page.setViewportSize({ width: 400, height: 800 });
    await sleep(1200);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth);
    check(overflow <= 400, `at 400 px nothing sticks out (scrollWidth ${overflow})`);
    const canvasW = await page.locator('#chart-throughput canvas').evaluate(c => c.clientWidth);
    check(canvasW > 250 && canvasW <= 400, `at 400 px a chart spans the window (${canvasW} px)`);
    const shot400 = path.join(outDir, 'dashboard-400.png');
    await page.screenshot({ path: shot400, fullPage: true });
    console.log(`screenshot: ${shot400}`);
    await page.setViewportSize({ width: 1280, height: 800 });

    /* Numbers in words: no digits lost or invented. */
    const formats = await page.evaluate(() => {
      const { formatValue: v, formatPercent: p } = window.BlqCharts;
      return [p(1), p(0.00001), p(0.5), v(99.97), v(1.5), v(0.005), v(123456), v(2500000), v(0), v(null)];
    });
    check(JSON.stringify(formats) ===
      JSON.stringify(['100 %', '0.001 %', '50 %', '100', '1.5', '0.005', '123k', '2.5M', '0', '–']),
      `numbers are formatted: ${formats.join(' | ')}`);

    /* A slow daemon: polls do not pile up and samples stay in order. Each
     * stats answer is held 2.5 s for 6 s. */
    let inflight = 0, maxInflight = 0;
    const slow = async route => {
      inflight++;
      maxInflight = Math.max(maxInflight, inflight);
      await sleep(2500);
      await route.continue().catch(() => {});
      inflight--;
    };
    await page.route('**/api/v1/stats*', slow);
    await sleep(6000);
    await page.unroute('**/api/v1/stats*', slow);
    const ordered = await page.evaluate(() =>
      window.blqDashboard.state.samples.every((s, i, a) => i === 0 || s.t > a[i - 1].t));
    check(maxInflight === 1, `with a slow daemon one stats request at a time (at most ${maxInflight})`);
    check(ordered, 'the samples stay in time order');

    /* The key stopped and started again between two polls: the charts start
     * afresh, with no rate made of the two runs' counters. */
    const instance = () => page.evaluate(() => window.blqDashboard.state.prev && window.blqDashboard.state.prev.instance);
    const before = await instance();
    check((await api('/api/v1/force-stop?key=demo100k')).ok, 'force-stop demo100k from outside');
    check((await api('/api/v1/init?key=demo100k', JSON.stringify({ capacity: 1000, workers_min: 1,
      workers_max: 4, worker_delay: 100000, producers_min: 1, producers_max: 2,
      producer_delay: 5000000 }))).ok, 'init demo100k again, 1 producer');
    await until('the new run on the page', async () => {
      const i = await instance();
      return i && i !== before && await page.evaluate(() => window.blqDashboard.state.samples.length >= 3);
    }, 10000);
    const prodMax = await chart('producers', 'max', 'producers_active');
    const inMax = await chart('throughput', 'max', 'in_rate');
    check(prodMax === 1, `the producers chart shows only the new run (max ${prodMax})`);
    check(inMax > 0 && inMax < 1000, `the in-rate is the new run's, about 200/s (max ${inMax})`);

    /* A long drain of one queue leaves the others' controls alone; while it
     * drains only force stop is offered, and it ends the drain. */
    check((await api('/api/v1/init?key=drain', JSON.stringify({ capacity: 100000, workers: 1,
      worker_delay: 20000000, producers_min: 4, producers_max: 4, producer_delay: 1000000 }))).ok,
      'init "drain" (one 20 ms worker, 4000 items/s in)');
    await sleep(1500);
    await until('"drain" in the list', async () =>
      await page.locator('#queue-select option[value="drain"]').count() === 1, 8000);
    await page.selectOption('#queue-select', 'drain');
    await page.click('#btn-stop');
    await until('"Stopping (draining)"', async () => /Stopping \(draining\) "drain"/.test(await say()), 5000);
    const disabled = id => page.locator(id).isDisabled();
    check(await disabled('#btn-up') && await disabled('#btn-stop') && !(await disabled('#btn-force-stop')),
      'while "drain" drains: raise, lower and stop are off, force stop is on');
    await page.selectOption('#queue-select', 'demo100k');
    await until('demo100k\'s controls', async () => !(await disabled('#btn-up')), 3000);
    check(!(await disabled('#btn-stop')) && await say() === '',
      'another queue\'s controls stay usable and the message was cleared');
    await page.selectOption('#queue-select', 'drain');
    await until('drain\'s stats', async () => await disabled('#btn-stop'), 3000);
    check(true, 'back on "drain": stop is still off');
    await page.click('#btn-force-stop');
    await until('"Stopped "drain""', async () => /Stopped "drain"/.test(await say()), 20000);
    check(/\(balanced\)/.test(await say()), `the forced drain's accounting: "${await say()}"`);
    await until('demo100k watched again', async () =>
      await page.locator('#queue-select').inputValue() === 'demo100k', 8000);

    /* Stop from the page: the final accounting is shown, balanced. */
    await page.click('#btn-stop');
    await until('"Stopped"', async () => /Stopped "demo100k"/.test(await say()), 60000);
    check(/\(balanced\)/.test(await say()), `the stop's accounting: "${await say()}"`);
    check(/\+ cancelled 0 \(balanced\)/.test(await say()), `the accounting counts cancelled items: "${await say()}"`);
    await until('the list to empty', async () =>
      await page.locator('#queue-select').inputValue() === '', 8000);
    check(true, 'the stopped queue leaves the list');

    /* QoS: a chart of the preset's sub-queues. demoQoS starts with no
     * producer; raise some from the page. */
    await openInitForm();
    await page.selectOption('#preset-select', 'demoQoS');
    await page.click('#init-submit');
    await until('"Started demoQoS"', async () => /Started "demoQoS"/.test(await say()), 5000);
    await page.fill('#producer-delta', '10');
    await page.click('#btn-up');
    await until('the QoS chart', async () => await page.locator('#chart-qos').isVisible(), 8000);
    const qosLegend = await page.locator('#chart-qos .legend').textContent();
    check(['high', 'medium', 'low', 'egress'].every(n => qosLegend.includes(n)),
      `the QoS chart has the sub-queues and the egress: ${qosLegend.replace(/\s+/g, ' ')}`);
    await until('in-rate on demoQoS', async () => await chart('throughput', 'latest', 'in_rate') > 0, 8000);
    check(true, 'demoQoS shows a non-zero in-rate');

    /* Retries and deadlines: a fifth of the attempts fail and retry after
     * 1 ms; with allow_deadline some items run late and go to the DLQ. */
    check((await api('/api/v1/init?key=flaky', JSON.stringify({ capacity: 10000, workers_min: 2,
      workers_max: 2, worker_delay: 200000, producers_min: 4, producers_max: 4,
      producer_delay: 2000000, fail_rate: 0.2, max_retries: 3, retry_interval_ns: 1000000,
      backoff: 'exponential', allow_leak: true, allow_deadline: true }))).ok, 'init "flaky" from outside');
    await until('"flaky" in the list', async () =>
      await page.locator('#queue-select option[value="flaky"]').count() === 1, 8000);
    await page.selectOption('#queue-select', 'flaky');
    let retryRate = 0;
    await until('retries on the chart', async () => {
      retryRate = await chart('retries', 'latest', 'retry_rate');
      return retryRate > 0;
    }, 10000);
    const note = await page.locator('#chart-retries .chart-note').textContent();
    const totals = note.match(/since start: (\S+) retries, (\S+) past their deadline/);
    check(retryRate > 0 && totals && totals[1] !== '0',
      `the retries chart: ${Math.round(retryRate)}/s, "${note}"`);
    check(totals && totals[2] !== '0' && await chart('retries', 'max', 'deadline_rate') > 0,
      'and items past their deadline');

    /* A dump: its chart appears, the QoS chart goes. */
    await openInitForm();
    await page.selectOption('#preset-select', 'demo100k_dump');
    await page.click('#init-submit');
    await until('"Started demo100k_dump"', async () => /Started "demo100k_dump"/.test(await say()), 5000);
    await until('the dump chart', async () => await page.locator('#chart-dump').isVisible(), 8000);
    check(await page.locator('#chart-qos').isHidden(), 'the QoS chart is hidden for a queue without QoS');
    const dumped = await page.locator('#chart-dump b[data-series="written"]').textContent();
    check(/^\d/.test(dumped), `the dump chart shows a count: dumped ${dumped}`);
    const restored = await page.locator('#chart-dump b[data-series="restored"]').textContent();
    check(/^\d/.test(restored), `and restored ${restored}`);

    /* Leaks by reason (issue 32): every item of "fails" fails into a DLQ
     * that never waits (no dump: discarded), so its leaks are failures and
     * never overflow; the tiles and the leaks chart say so. */
    check((await api('/api/v1/init?key=fails', JSON.stringify({ capacity: 1000, workers_min: 1,
      workers_max: 1, worker_delay: 100000, producers_min: 1, producers_max: 1,
      producer_delay: 10000000, fail_rate: 1, fail_to_dlq: true, allow_leak: true }))).ok,
    'init "fails" (every item fails, fail_to_dlq, no dump)');
    await until('"fails" in the list', async () =>
      await page.locator('#queue-select option[value="fails"]').count() === 1, 8000);
    await page.selectOption('#queue-select', 'fails');
    const tile = m => page.locator(`[data-metric="${m}"]`).textContent();
    await until('failed leaks on the tile', async () => Number(await tile('leak_failed_rate')) > 0, 10000);
    const why = {};
    for (const m of ['leak_rear_rate', 'leak_front_rate', 'leak_failed_rate', 'leak_deadline_rate',
      'leak_closed_rate', 'dlq_waiting']) why[m] = await tile(m);
    check(Number(why.leak_failed_rate) > 0 && why.leak_rear_rate === '0' && why.leak_front_rate === '0' &&
      why.leak_deadline_rate === '0' && why.leak_closed_rate === '0' && why.dlq_waiting === '0',
      `the leak tiles by reason: ${JSON.stringify(why)}`);
    check(await chart('leaks', 'max', 'leak_failed_rate') > 0 && await chart('leaks', 'max', 'leak_rear_rate') === 0,
      'the leaks chart: failed > 0, overflow rear 0');
    const sums = (await (await fetch(`${base}/api/v1/stats?key=fails`)).json()).counters;
    check(sums.leaked_failed > 0 && sums.leaked_failed === sums.leaked && sums.failed === 0,
      `/api/v1/stats: leaked ${sums.leaked} = failed ${sums.leaked_failed} (rear ${sums.leaked_rear}, front ${sums.leaked_front}), failed outcomes ${sums.failed}`);
    check((await api('/api/v1/stop?key=fails')).ok, 'stop "fails"');

    /* The DLQ section: a key whose items all fail into the dump and, once
     * restored and failed again, into the dead store; then started again
     * with a worker that never fails, so what is redriven stays out. */
    const dlqBody = fail => JSON.stringify({ capacity: 100, workers_min: 1, workers_max: 1,
      worker_delay: 1000000, producers_min: 0, producers_max: 1, producer_delay: 20000000,
      fail_rate: fail, fail_to_dlq: true, allow_leak: true, dump: { capacity: 64, flush: 100000000 },
      restore: { check: 100000000, max_restores: 1 } });
    const dlqSum = async () => (await (await fetch(`${base}/api/v1/dlq?key=dlqk`)).json());
    check((await api('/api/v1/init?key=dlqk', dlqBody(1))).ok, 'init "dlqk" (every item fails, max_restores 1)');
    check((await api('/api/v1/producer-up?key=dlqk')).ok, 'one producer on "dlqk"');
    await until('30 records in the dead store', async () => (await dlqSum()).areas.dead.records >= 30, 15000);
    check((await api('/api/v1/stop?key=dlqk')).ok, 'stop "dlqk"');
    check((await api('/api/v1/init?key=dlqk', dlqBody(0))).ok, 'init "dlqk" again, a worker that never fails');
    await until('the dump settled', async () => (await dlqSum()).areas.dump.records === 0, 15000);
    const dead0 = (await dlqSum()).areas.dead.records;
    await until('"dlqk" in the list', async () =>
      await page.locator('#queue-select option[value="dlqk"]').count() === 1, 8000);
    await page.selectOption('#queue-select', 'dlqk');
    const deadTile = () => page.locator('#dlq-areas .tile[data-area="dead"] .value').textContent();
    await until('the DLQ section', async () => await page.locator('#dlq').isVisible() &&
      await deadTile() === String(dead0), 8000);
    check(true, `the DLQ section shows the dead store's ${dead0} records`);
    /* The dump chart's dead-store line follows the DLQ section's count. */
    await until('the dead store on the dump chart', async () =>
      (await chart('dump', 'latest', 'dead')) === dead0, 8000);
    const deadLine = await page.locator('#chart-dump b[data-series="dead"]').textContent();
    check(Number(deadLine) === dead0, `the dump chart has a dead-store line: ${deadLine}`);
    await until('a page of records', async () => await page.locator('#dlq-table tbody tr').count() === 20, 5000);
    const reasons = await page.locator('#dlq-table tbody tr td:nth-child(4)').allTextContents();
    /* failed twice, or failed and restored, then still queued at the stop (closed) */
    check(reasons.length === 20 && reasons.every(r => r === 'failed' || r === 'closed') &&
      reasons.includes('failed'),
      `a page of 20 records, each with its reason: ${[...new Set(reasons)].join(',')}`);
    await page.locator('#dlq-table tbody tr input[type=checkbox]').nth(0).check();
    await page.locator('#dlq-table tbody tr input[type=checkbox]').nth(1).check();
    await page.fill('#dlq-rate', '50');
    await page.click('#dlq-redrive-sel');
    await until('the redrive done', async () =>
      await page.locator('#dlq-progress').getAttribute('data-state') === 'done' &&
      await deadTile() === String(dead0 - 2), 10000);
    check(/2 of 2 moved/.test(await page.locator('#dlq-progress').textContent()),
      `redrive selected: "${await page.locator('#dlq-progress').textContent()}", the dead store ${dead0} -> ${dead0 - 2}`);
    await until('the two processed', async () =>
      (await (await fetch(`${base}/api/v1/stats?key=dlqk`)).json()).restore.processed >= 2, 8000);
    check(true, 'the queue processed the two redriven items');
    await page.locator('#dlq').scrollIntoViewIfNeeded();
    const shotDlq = path.join(outDir, 'dashboard-dlq.png');
    await page.locator('#dlq').screenshot({ path: shotDlq });
    console.log(`screenshot: ${shotDlq}`);
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#dlq-download')]);
    const file = path.join(dumpDir, 'dead.jsonl');
    await download.saveAs(file);
    const lines = fs.readFileSync(file, 'utf8').split('\n').filter(Boolean);
    check(lines.length === dead0 - 2 && lines.every(l => /^(failed|closed)$/.test(JSON.parse(l).why.reason)),
      `download: ${download.suggestedFilename()}, ${lines.length} JSON lines (want ${dead0 - 2})`);
    let asked = '';
    page.once('dialog', d => { asked = d.message(); d.accept(); });
    await page.click('#dlq-purge');
    await until('the dead store purged', async () => await deadTile() === '0', 8000);
    check(/Delete all/.test(asked) && /Purged the dead store: \d+ records/.test(await say()),
      `purge after a confirm ("${asked}"): "${await say()}"`);

    /* A daemon that went away is reported, not silently ignored. */
    daemon.kill('SIGTERM');
    const st = await exited;
    check(st.code === 0, `blq-demo exited ${st.code} on SIGTERM`);
    await until('"unreachable"', async () =>
      /unreachable/.test(await page.locator('#connection').textContent()), 8000);
    check(true, 'the page says when the daemon is unreachable');

    check(foreign.length === 0, `nothing fetched from elsewhere${foreign.length ? ': ' + foreign.join(' ') : ''}`);
    /* Requests to a stopped daemon fail in the console by design; any
     * other error is the page's. */
    const real = pageErrors.filter(e => !/ERR_CONNECTION_REFUSED|Failed to load resource/.test(e));
    check(real.length === 0, `no script errors${real.length ? ': ' + real.join(' | ') : ''}`);
  } finally {
    if (browser) await browser.close();
    if (daemon.exitCode === null && daemon.signalCode === null) daemon.kill('SIGKILL');
    fs.rmSync(dumpDir, { recursive: true, force: true });
  }
}

main().then(() => {
  console.log(failures ? `${failures} check(s) failed` : 'all checks passed');
  process.exit(failures ? 1 : 0);
}, e => {
  console.error(`FAIL ${e.stack || e}`);
  process.exit(1);
});
