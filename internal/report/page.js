// Draws the charts of a longhaul lab report from the embedded JSON.
(function () {
  "use strict";
  var page = JSON.parse(document.getElementById("data").textContent);
  var palette = ["#2f6db5", "#d9622b", "#2e9b4f", "#8e44ad", "#c0392b", "#16a085", "#7f8c8d", "#b8860b"];

  // errorBars draws min..max whiskers of measured series; marks draws
  // the chart's labelled vertical lines.
  function overlay(cd, spans) {
    return function (u) {
      var ctx = u.ctx;
      ctx.save();
      spans.forEach(function (sp) {
        if (!u.series[sp.idx].show) return;
        ctx.strokeStyle = sp.color;
        ctx.lineWidth = 1.5 * devicePixelRatio;
        for (var i = 0; i < cd.x.length; i++) {
          var lo = sp.min[i], hi = sp.max[i];
          if (lo == null || hi == null || lo === hi) continue;
          var x = u.valToPos(cd.x[i], "x", true) + (sp.offset || 0);
          var y0 = u.valToPos(lo, "y", true), y1 = u.valToPos(hi, "y", true);
          ctx.beginPath();
          ctx.moveTo(x, y0); ctx.lineTo(x, y1);
          ctx.moveTo(x - 4, y0); ctx.lineTo(x + 4, y0);
          ctx.moveTo(x - 4, y1); ctx.lineTo(x + 4, y1);
          ctx.stroke();
        }
      });
      (cd.marks || []).forEach(function (m) {
        var x = u.valToPos(m.x, "x", true);
        if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) return;
        ctx.strokeStyle = "#888";
        ctx.setLineDash([4, 4]);
        ctx.beginPath();
        ctx.moveTo(x, u.bbox.top); ctx.lineTo(x, u.bbox.top + u.bbox.height);
        ctx.stroke();
        ctx.setLineDash([]);
        ctx.fillStyle = "#555";
        ctx.font = (12 * devicePixelRatio) + "px sans-serif";
        ctx.fillText(m.label, x + 4, u.bbox.top + 14 * devicePixelRatio);
      });
      ctx.restore();
    };
  }

  // barLabel breaks "200 ms x 1 Gbit/s" after the RTT so that many bars'
  // labels do not run into each other.
  function barLabel(name) {
    return (name || "").replace(" x ", "\n");
  }

  function draw(cd, el) {
    var width = Math.max(480, el.clientWidth || 900);
    var bar = cd.kind === "bar";
    var series = [{ label: cd.x_label, value: function (u, v) { return bar ? (cd.x_names[v] || "") : fmt(v, cd.x_unit); } }];
    var data = [cd.x];
    var spans = [];
    var rightUnit = null;
    var colorOf = {};
    cd.series.forEach(function (s, i) {
      var base = s.label.replace(/ \(model\)$/, "");
      if (!(base in colorOf)) colorOf[base] = palette[Object.keys(colorOf).length % palette.length];
      var color = colorOf[base];
      var unit = s.axis === 1 ? s.right_unit : cd.y_unit;
      var o = { label: s.label, stroke: color, width: 2, scale: s.axis === 1 ? "r" : "y",
        value: function (u, v) { return fmt(v, unit); }, spanGaps: true };
      if (s.axis === 1) rightUnit = s.right_unit;
      if (s.role === "model") {
        o.dash = [8, 5]; o.width = 1.5; o.stroke = color + "99"; o.points = { show: bar, size: 12, width: 2, fill: "#fff" };
        if (bar) { o.paths = function () { return null; }; o.stroke = "#222"; }
      } else if (s.role === "measured") {
        o.points = { show: true, size: 7, fill: color };
        if (bar) { o.paths = uPlot.paths.bars({ size: [0.6, 120] }); o.fill = color + "cc"; o.points = { show: false }; }
        if (s.min) spans.push({ idx: i + 1, min: s.min, max: s.max, color: bar ? "#222" : color });
      } else if (s.role === "event") {
        o.paths = function () { return null; };
        o.points = { show: true, size: 9, width: 2, fill: "#fff" };
      } else {
        o.points = { show: false }; o.width = 1.5;
      }
      series.push(o);
      data.push(s.y);
    });
    var axes = [
      { label: cd.x_label, values: function (u, vals) { return vals.map(function (v) { return bar ? barLabel(cd.x_names[Math.round(v)]) : fmt(v, cd.x_unit); }); } },
      { label: cd.y_label, size: 90, values: function (u, vals) { return vals.map(function (v) { return fmt(v, cd.y_unit); }); } }
    ];
    if (bar) {
      axes[0].splits = function () { return cd.x; }; axes[0].gap = 8;
      if (cd.x.length > 6) axes[0].size = 64; // two-line labels, see barLabel
    }
    var scales = { x: { time: false }, y: { range: function (u, lo, hi) { return [cd.y_log ? lo : Math.min(0, lo), hi * 1.08]; } } };
    if (cd.x_log) {
      scales.x = { time: false, distr: 3, log: cd.x_unit === "bytes" ? 2 : 10 };
      if (cd.x_unit === "bytes") axes[0].splits = function (u) { return pow2Splits(u.scales.x.min, u.scales.x.max); };
    }
    if (cd.x_unit === "bytes" && !cd.x_log && !bar) axes[0].splits = function (u, i, lo, hi) { return byteSplits(lo, hi); };
    if (cd.y_unit === "bytes" && !cd.y_log) axes[1].splits = function (u, i, lo, hi) { return byteSplits(lo, hi); };
    if (cd.x_unit === "count" && !cd.x_log && !bar) axes[0].splits = function (u) { return intSplits(u.scales.x.min, u.scales.x.max); };
    if (cd.y_log) scales.y = { distr: 3, log: 10 };
    if (bar) scales.x.range = function () { return [-0.6, cd.x.length - 0.4]; };
    if (rightUnit) {
      scales.r = { range: function (u, lo, hi) { return [0, hi * 1.1]; } };
      axes.push({ scale: "r", side: 1, size: 70, grid: { show: false }, label: "RTT",
        values: function (u, vals) { return vals.map(function (v) { return fmt(v, rightUnit); }); } });
    }
    var opts = {
      title: cd.title, width: width, height: 380, series: series, axes: axes, scales: scales,
      cursor: { drag: { x: !bar, y: false } },
      hooks: { draw: [overlay(cd, spans)] }
    };
    return new uPlot(opts, data, el);
  }

  var root = document.getElementById("charts"), drawn = 0;
  page.charts.forEach(function (cd) {
    var box = document.createElement("div");
    box.className = "chart";
    box.id = "chart-" + cd.id;
    root.appendChild(box);
    try {
      var plotEl = document.createElement("div");
      box.appendChild(plotEl);
      draw(cd, plotEl);
      if (cd.note) {
        var p = document.createElement("p");
        p.className = "note";
        p.textContent = cd.note;
        box.appendChild(p);
      }
      drawn++;
    } catch (e) {
      document.getElementById("error").textContent += "chart " + cd.id + " failed: " + e + ". ";
    }
  });
  document.body.setAttribute("data-charts", drawn + "/" + page.charts.length);
})();
