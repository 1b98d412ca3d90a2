// Axis arithmetic of the report's charts: pure functions (no DOM), so
// that a test can run them alone (report_test.go, with node).

function si(v, unit, base, prefixes) {
  if (v == null || !isFinite(v)) return "-";
  var a = Math.abs(v), i = 0;
  while (a >= base && i < prefixes.length - 1) { a /= base; v /= base; i++; }
  var s = Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2);
  if (s.indexOf(".") >= 0) s = s.replace(/\.?0+$/, "");
  return s + " " + prefixes[i] + unit;
}
function fmt(v, unit) {
  if (v == null || !isFinite(v)) return "";
  switch (unit) {
    case "bps": return si(v, "bit/s", 1000, ["", "k", "M", "G", "T"]);
    case "bytes": return si(v, "B", 1024, ["", "Ki", "Mi", "Gi", "Ti"]);
    case "s": return Math.abs(v) < 1 ? +(v * 1000).toPrecision(3) + " ms" : +v.toPrecision(3) + " s";
    case "rounds": return +v.toFixed(1) + "";
    case "count": return Math.round(v) + "";
    case "pct": return v.toFixed(1) + " %";
    default: return +v.toPrecision(3) + "";
  }
}

// pow2Splits are powers of two across [lo, hi], every second or fourth
// one when there would be more than ten.
function pow2Splits(lo, hi) {
  var a = Math.ceil(Math.log2(lo)), b = Math.floor(Math.log2(hi)), step = 1, out = [];
  while ((b - a) / step > 10) step *= 2;
  for (var e = a; e <= b; e += step) out.push(Math.pow(2, e));
  return out;
}

// intSplits are whole numbers across [lo, hi] (stream counts: 1, 2, 4,
// never 1.5), at most about ten of them.
function intSplits(lo, hi) {
  var a = Math.ceil(lo), b = Math.floor(hi), step = 1, out = [];
  while ((b - a) / step > 10) step *= 2;
  for (var v = a; v <= b; v += step) out.push(v);
  return out;
}

// byteSplits tick a linear byte axis at multiples of a power of two, so
// that the binary labels read round (8 MiB, 16 MiB, 24 MiB; not the
// decimal steps' 9.54, 19.1, 28.6 MiB), about five to ten of them.
function byteSplits(lo, hi) {
  var out = [];
  if (!(hi > lo)) return out;
  var step = Math.pow(2, Math.ceil(Math.log2((hi - lo) / 8)));
  for (var v = Math.ceil(lo / step) * step; v <= hi; v += step) out.push(v);
  return out;
}
