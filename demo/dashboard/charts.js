/*
 * A small line chart on a canvas, for the dashboard: a few series over the
 * last `span` seconds, a y axis from 0 with round ticks, seconds-ago on x,
 * and an HTML legend holding each series' latest value. No library: the
 * page must work from the binary alone.
 */
'use strict';

(function () {
  const GAP_S = 3; /* samples further apart than this are not joined */
  const PALETTE = ['#2563eb', '#16a34a', '#dc2626', '#9333ea', '#ea580c', '#0891b2', '#ca8a04', '#64748b'];

  /* A round step for about `n` ticks up to `max`: 1, 2 or 5 times 10^k. */
  function niceStep(max, n) {
    const raw = max / n;
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const f = raw / mag;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
  }

  /* 3 significant digits without trailing zeros after the point:
   * 0.00500 -> "0.005", 1.50 -> "1.5", 100 -> "100". */
  function digits3(v) {
    const t = v.toPrecision(3);
    return t.includes('.') && !t.includes('e') ? t.replace(/\.?0+$/, '') : t;
  }

  /* 1234567 -> "1.23M"; small numbers keep up to 3 significant digits. */
  function formatValue(v) {
    if (typeof v !== 'number' || !Number.isFinite(v)) return '–';
    const a = Math.abs(v);
    if (a >= 1e9) return digits3(v / 1e9) + 'G';
    if (a >= 1e6) return digits3(v / 1e6) + 'M';
    if (a >= 1e4) return digits3(v / 1e3) + 'k';
    if (a >= 100 || Number.isInteger(v)) return String(Math.round(v));
    return digits3(v);
  }

  /* A fraction as a percentage: 1 -> "100 %", 0.00001 -> "0.001 %". */
  function formatPercent(v) {
    return typeof v === 'number' && Number.isFinite(v) ? formatValue(v * 100) + ' %' : '–';
  }

  class LineChart {
    /*
     * parent: the element the chart goes into.
     * opts: {id, title, series: [{key, label, color?, dash?}], span?, unit?}
     * span: the seconds of history kept and drawn (120).
     */
    constructor(parent, opts) {
      this.id = opts.id;
      this.span = opts.span || 120;
      this.unit = opts.unit || '';
      this.series = opts.series.map((s, i) => ({
        key: s.key, label: s.label, dash: s.dash || null,
        color: s.color || PALETTE[i % PALETTE.length], values: []
      }));
      this.times = [];

      this.el = document.createElement('figure');
      this.el.className = 'chart';
      this.el.id = 'chart-' + opts.id;
      const cap = document.createElement('figcaption');
      cap.textContent = opts.title;
      this.canvas = document.createElement('canvas');
      this.canvas.setAttribute('role', 'img');
      this.canvas.setAttribute('aria-label', opts.title);
      this.legend = document.createElement('div');
      this.legend.className = 'legend';
      for (const s of this.series) {
        const item = document.createElement('span');
        item.className = 'legend-item';
        const swatch = document.createElement('i');
        swatch.style.background = s.color;
        if (s.dash) swatch.className = 'dashed';
        const name = document.createElement('span');
        name.textContent = s.label + ' ';
        s.valueEl = document.createElement('b');
        s.valueEl.dataset.series = s.key;
        s.valueEl.textContent = '–';
        item.append(swatch, name, s.valueEl);
        this.legend.append(item);
      }
      this.note = document.createElement('div');
      this.note.className = 'chart-note';
      this.el.append(cap, this.canvas, this.legend, this.note);
      parent.append(this.el);
      new ResizeObserver(() => this.draw()).observe(this.canvas);
    }

    /* Appends one sample: values.t is its time in seconds (the daemon's
     * clock, increasing); a missing or non-numeric value leaves a gap.
     * draw false: the caller draws later (many samples at once). */
    push(values, draw = true) {
      this.times.push(values.t);
      for (const s of this.series) {
        const v = values[s.key];
        s.values.push(typeof v === 'number' && Number.isFinite(v) ? v : null);
        s.valueEl.textContent = formatValue(v) + (typeof v === 'number' ? this.unit : '');
      }
      while (values.t - this.times[0] > this.span) {
        this.times.shift();
        for (const s of this.series) s.values.shift();
      }
      if (draw) this.draw();
    }

    /* A line of text under the legend (e.g. totals); '' hides it. */
    setNote(text) {
      this.note.textContent = text;
    }

    clear() {
      this.setNote('');
      this.times = [];
      for (const s of this.series) {
        s.values = [];
        s.valueEl.textContent = '–';
      }
      this.draw();
    }

    /* The latest value of a series, and its largest over the window. */
    latest(key) {
      const s = this.series.find(x => x.key === key);
      return s && s.values.length ? s.values[s.values.length - 1] : null;
    }
    max(key) {
      const s = this.series.find(x => x.key === key);
      return s ? s.values.reduce((m, v) => (v !== null && v > m ? v : m), 0) : null;
    }

    draw() {
      const c = this.canvas;
      const w = c.clientWidth, h = c.clientHeight;
      if (w === 0 || h === 0) return; /* hidden */
      const dpr = window.devicePixelRatio || 1;
      if (c.width !== Math.round(w * dpr) || c.height !== Math.round(h * dpr)) {
        c.width = Math.round(w * dpr);
        c.height = Math.round(h * dpr);
      }
      const g = c.getContext('2d');
      g.setTransform(dpr, 0, 0, dpr, 0, 0);
      g.clearRect(0, 0, w, h);
      const style = getComputedStyle(this.el);
      const ink = style.getPropertyValue('--ink-soft') || '#666';
      const grid = style.getPropertyValue('--grid') || '#ddd';

      let top = 0;
      for (const s of this.series)
        for (const v of s.values) if (v !== null && v > top) top = v;
      const step = top > 0 ? niceStep(top, 4) : 1;
      const ymax = top > 0 ? Math.ceil(top / step) * step : 1;

      g.font = '11px system-ui, sans-serif';
      const labels = [];
      for (let y = 0; y <= ymax + step / 2; y += step) labels.push([y, formatValue(y)]);
      const left = 6 + Math.max(...labels.map(([, t]) => g.measureText(t).width));
      const right = 8, bottom = 18, topPad = 6;
      const pw = Math.max(10, w - left - right), ph = Math.max(10, h - topPad - bottom);
      const yOf = v => topPad + ph - (v / ymax) * ph;
      /* x is time: seconds before the newest sample. The axis grows with
       * the history, from 30 s up to the span, so a young queue's lines are
       * not squeezed into a corner. */
      const tNow = this.times.length ? this.times[this.times.length - 1] : 0;
      const n = Math.min(this.span, Math.max(30, this.times.length ? tNow - this.times[0] : 0));
      const xAgo = ago => left + pw * (1 - ago / n);

      g.strokeStyle = grid;
      g.fillStyle = ink;
      g.lineWidth = 1;
      g.textAlign = 'right';
      g.textBaseline = 'middle';
      for (const [y, text] of labels) {
        const py = Math.round(yOf(y)) + 0.5;
        g.beginPath();
        g.moveTo(left, py);
        g.lineTo(left + pw, py);
        g.stroke();
        g.fillText(text, left - 4, py);
      }
      g.textBaseline = 'top';
      const every = n > 150 ? 60 : n > 60 ? 30 : n > 30 ? 15 : 10;
      for (let ago = 0; ago < n; ago += every) {
        g.textAlign = ago === 0 ? 'right' : 'center';
        g.fillText(ago === 0 ? 'now' : '-' + ago + 's', xAgo(ago), topPad + ph + 4);
      }

      g.lineWidth = 1.75;
      g.lineJoin = 'round';
      for (const s of this.series) {
        g.strokeStyle = s.color;
        g.setLineDash(s.dash ? [5, 4] : []);
        g.beginPath();
        let pen = false;
        s.values.forEach((v, i) => {
          /* No line across a value missing or a poll that did not answer. */
          if (v === null || (i > 0 && this.times[i] - this.times[i - 1] > GAP_S)) pen = false;
          if (v === null) return;
          const x = xAgo(tNow - this.times[i]), y = yOf(v);
          if (pen) g.lineTo(x, y); else g.moveTo(x, y);
          pen = true;
        });
        g.stroke();
      }
      g.setLineDash([]);
    }
  }

  window.BlqCharts = { LineChart, formatValue, formatPercent };
})();
