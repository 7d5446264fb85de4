// The perf page's plots: each <figure class="perf-chart"> names the <script type="application/json">
// holding its chart (built by console/perf_chart.py) and is drawn with the vendored uPlot.
// The page's table shows the same data without JavaScript; this only adds the picture.
//
// After drawing, a figure says what it shows, for people's tools and for the browser tests:
// data-state="drawn", data-scale ("linear" or "log"), data-drawn-markers: the alerts that
// landed inside the plot, each with its pixel position on the canvas (CSS pixels), and
// data-drawn-noisy: the same for the points of noisy reports (drawn hollow).
// A chart of kind "duet" holds contender/baseline ratios: its band is their interval, and a
// dashed line marks 1 (no change).
// The chart's columns (x, each line's values, noisy points and band edges) come packed
// (console/chart_columns.py): base64 of little-endian doubles, NaN where a line has no point;
// they are unpacked into arrays of numbers and nulls, and the chart as drawn is kept as
// figure.chart beside figure.plot.
(function () {
  "use strict";

  // Colours with a contrast ratio of at least 3:1 on white (WCAG's for graphics).
  var PALETTE = ["#1f5fbf", "#b35900", "#2e7d32", "#8e24aa", "#00838f", "#6d4c41", "#c2185b", "#455a64"];
  var ALERT_FILL = "#d50000";
  var ALERT_STROKE = "#7f0000";
  var HOLLOW_FILL = "#ffffff";
  var REFERENCE = "#4f5863";

  function alpha(hex, a) {
    var n = parseInt(hex.slice(1), 16);
    return "rgba(" + (n >> 16) + "," + ((n >> 8) & 255) + "," + (n & 255) + "," + a + ")";
  }

  // A packed column as uPlot's data: a number per point, null where there is none (NaN) or
  // where it is not finite (an infinite limit is not drawn).
  function unpacked(packed) {
    if (packed === null) return null;
    var bytes = atob(packed);
    var view = new DataView(new ArrayBuffer(bytes.length));
    for (var i = 0; i < bytes.length; i++) view.setUint8(i, bytes.charCodeAt(i));
    var values = new Array(bytes.length / 8);
    for (var k = 0; k < values.length; k++) {
      var v = view.getFloat64(k * 8, true);
      values[k] = isFinite(v) ? v : null;
    }
    return values;
  }

  function unpackedChart(chart) {
    chart.x = unpacked(chart.x);
    chart.lines.forEach(function (line) {
      line.values = unpacked(line.values);
      line.noisy = unpacked(line.noisy);
      if (line.band) {
        line.band.low = unpacked(line.band.low);
        line.band.high = unpacked(line.band.high);
      }
    });
    return chart;
  }

  function positive(values, log) {
    if (!log) return values;
    return values.map(function (v) { return v !== null && v > 0 ? v : null; });
  }

  function build(chart, log) {
    var data = [chart.x];
    var series = [{}];
    var bands = [];
    var duet = chart.kind === "duet";
    var highName = duet ? "interval high: " : "upper limit: ";
    var lowName = duet ? "interval low: " : "lower limit: ";
    var noisyAt = [];
    if (duet) {
      data.push(chart.x.map(function () { return 1; }));
      series.push({ label: "1: no change", stroke: REFERENCE, width: 1, dash: [2, 4], points: { show: false } });
    }
    chart.lines.forEach(function (line, i) {
      var colour = PALETTE[i % PALETTE.length];
      data.push(positive(line.values, log));
      series.push({ label: line.label, stroke: colour, width: 2, spanGaps: true, points: { show: true, size: 5, fill: colour } });
      var valueIndex = data.length - 1;
      if (line.band) {
        data.push(positive(line.band.high, log));
        series.push({
          label: (line.band.high_is_limit ? highName : "baseline: ") + line.label,
          stroke: line.band.high_is_limit ? alpha(colour, 0.9) : alpha(colour, 0.35),
          width: 1, dash: [6, 4], spanGaps: true, points: { show: false },
        });
        data.push(positive(line.band.low, log));
        series.push({
          label: (line.band.low_is_limit ? lowName : "baseline: ") + line.label,
          stroke: line.band.low_is_limit ? alpha(colour, 0.9) : alpha(colour, 0.35),
          width: 1, dash: [6, 4], spanGaps: true, points: { show: false },
        });
        bands.push({ series: [data.length - 2, data.length - 1], fill: alpha(colour, 0.12) });
      }
      if (line.noisy) {
        // Points of noisy reports: hollow rings in the line's colour over its filled points,
        // a legend entry of their own.
        data.push(positive(line.noisy, log));
        series.push({
          label: "noisy (hollow): " + line.label,
          stroke: colour,
          width: 0,
          paths: function () { return null; },
          points: { show: true, size: 12, width: 3, stroke: colour, fill: HOLLOW_FILL },
        });
        var noisyIndex = data.length - 1;
        line.noisy.forEach(function (v, at) {
          if (v !== null) noisyAt.push({ x: chart.x[at], value: v, line: i, seriesIndex: noisyIndex });
        });
      }
      var marks = chart.markers.filter(function (m) { return m.line === i; });
      if (marks.length) {
        var at = {};
        marks.forEach(function (m) { at[m.x] = m.value; });
        data.push(positive(chart.x.map(function (x) { return x in at ? at[x] : null; }), log));
        series.push({
          label: "alerts: " + line.label,
          stroke: ALERT_STROKE,
          fill: ALERT_FILL,
          width: 0,
          paths: function () { return null; },
          points: { show: true, size: 13, width: 2, stroke: ALERT_STROKE, fill: ALERT_FILL },
        });
        marks.forEach(function (m) { m.seriesIndex = data.length - 1; m.valueIndex = valueIndex; });
      }
    });
    return { data: data, series: series, bands: bands, noisy: noisyAt };
  }

  // Where a point landed on the canvas element, in CSS pixels (the plot area starts at
  // bbox); null when it fell outside the plot.
  function canvasPosition(plot, x, value) {
    var left = plot.valToPos(x, "x");
    var top = plot.valToPos(value, "y");
    var inside = isFinite(left) && isFinite(top) && left >= 0 && top >= 0 &&
      left <= plot.bbox.width / devicePixelRatio && top <= plot.bbox.height / devicePixelRatio;
    if (!inside) return null;
    return { left: left + plot.bbox.left / devicePixelRatio, top: top + plot.bbox.top / devicePixelRatio };
  }

  function drawnMarkers(plot, chart) {
    var found = [];
    chart.markers.forEach(function (m) {
      if (m.seriesIndex === undefined) return;
      var at = canvasPosition(plot, m.x, m.value);
      if (!at) return;
      found.push({
        alert: m.alert, report: m.report, limit: m.limit, status: m.status, value: m.value,
        left: at.left, top: at.top,
      });
    });
    return found;
  }

  function drawnNoisy(plot, points) {
    var found = [];
    points.forEach(function (p) {
      var at = canvasPosition(plot, p.x, p.value);
      if (at) found.push({ line: p.line, value: p.value, left: at.left, top: at.top });
    });
    return found;
  }

  function draw(figure, log) {
    var chart = unpackedChart(JSON.parse(document.getElementById(figure.dataset.chart).textContent));
    figure.chart = chart;
    var target = figure.querySelector(".perf-plot");
    if (figure.plot) figure.plot.destroy();
    var built = build(chart, log);
    var options = {
      width: Math.max(320, target.clientWidth || 800),
      height: 320,
      series: built.series,
      bands: built.bands,
      scales: {
        // A little room on both sides, so that a marker on the first or last point shows whole.
        x: { time: true, range: function (u, min, max) {
          // One x value (a single duet, a single report): uPlot widens it by 86400 * 1000
          // (milliseconds taken for seconds), pushing the point to the edge of years of axis.
          var xs = u.data[0];
          if (xs.length && xs[0] === xs[xs.length - 1]) { min = max = xs[0]; }
          var pad = Math.max((max - min) * 0.02, 60);
          return [min - pad, max + pad];
        } },
        y: { distr: log ? 3 : 1 },
      },
      axes: [{}, { label: chart.kind === "duet" ? "contender / baseline" : chart.units, size: 70 }],
      legend: { live: false },
      hooks: {
        // Scales and sizes are committed asynchronously: positions are known once drawn.
        draw: [function (plot) {
          figure.dataset.scale = log ? "log" : "linear";
          figure.dataset.drawnMarkers = JSON.stringify(drawnMarkers(plot, chart));
          figure.dataset.drawnNoisy = JSON.stringify(drawnNoisy(plot, built.noisy));
          figure.dataset.state = "drawn";
        }],
      },
    };
    figure.dataset.state = "drawing";
    figure.plot = new uPlot(options, built.data, target);
  }

  function currentScale() {
    var chosen = document.querySelector("input[name=scale]:checked");
    return chosen ? chosen.value : "linear";
  }

  function drawAll() {
    var log = currentScale() === "log";
    document.querySelectorAll("figure.perf-chart").forEach(function (f) { draw(f, log); });
  }

  function rememberScale() {
    // The scale is part of the shared state: the URL and the share link follow the switch.
    var url = new URL(window.location.href);
    url.searchParams.set("scale", currentScale());
    window.history.replaceState(null, "", url);
    var share = document.getElementById("perf-share");
    if (share) share.href = url.pathname + url.search;
  }

  document.addEventListener("DOMContentLoaded", function () {
    if (typeof uPlot === "undefined") return;
    document.querySelectorAll("input[name=scale]").forEach(function (input) {
      input.addEventListener("change", function () { rememberScale(); drawAll(); });
    });
    drawAll();
    var resizing = null;
    window.addEventListener("resize", function () {
      clearTimeout(resizing);
      resizing = setTimeout(drawAll, 200);
    });
  });
})();
