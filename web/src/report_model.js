// What the page computes from a report: byte formatting as the text summary writes it, the
// measures a flame graph is weighted by (the same as `tleak export`), frame names, the top sites
// and the line a growth verdict was fitted with.

export function bytes(n) {
  if (n == null || !Number.isFinite(n)) return "";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = n, u = 0;
  while (Math.abs(v) >= 1024 && u < units.length - 1) { v /= 1024; ++u; }
  return u === 0 ? `${Math.round(v)} B` : `${v.toFixed(1)} ${units[u]}`;
}

// An axis's tick labels: one unit for all of them (the largest's), and as many decimals as keep
// neighbouring ticks apart (bytes() alone wrote 63.1 MiB twice on a chart whose ticks were 50 KiB
// apart).
export function byteTicks(values) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  const largest = Math.max(0, ...values.map((v) => Math.abs(v ?? 0)));
  let u = 0;
  while (largest >= 1024 ** (u + 1) && u < units.length - 1) ++u;
  const scale = 1024 ** u;
  const steps = values.slice(1).map((v, i) => Math.abs(v - values[i])).filter((d) => d > 0);
  const step = steps.length > 0 ? Math.min(...steps) / scale : 1;
  const decimals = u === 0 ? 0 : Math.min(4, Math.max(1, Math.ceil(-Math.log10(step))));
  return values.map((v) => (v == null ? "" : `${(v / scale).toFixed(decimals)} ${units[u]}`));
}

// The steps an iteration or sample axis may have between ticks: whole ones (uPlot's own choice
// put ticks at iteration 2.5, 7.5, ...).
export const WHOLE_STEPS = [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 2500, 5000, 10000, 20000, 25000,
  50000, 100000, 200000, 250000, 500000, 1000000];

// What one step of a run's series is called, as in the text summary (step_words.h): an iteration
// (a scenario, a program that marks its loop), or a time sample of a program without marks.
export function stepWords(run) {
  if (run && run.program && run.program.clock === "time") {
    const seconds = run.program.sample_seconds;
    const per = seconds < 1 ? `${Math.round(seconds * 1e6) / 1e3} ms` : `${seconds} s`;
    return { per, one: "sample", many: "samples" };
  }
  return { per: "iteration", one: "iteration", many: "iterations" };
}

// A count and its noun, as the text summary says it (counted.h): "1 block", "3 blocks".
export function counted(n, one, many) {
  return `${n} ${n === 1 ? one : many}`;
}

export function byteRate(n, words = stepWords(null)) {
  return `${n >= 0 ? "+" : ""}${bytes(n)} per ${words.per}`;
}

// [value, title]: the measures of `tleak export --measure`.
export const MEASURES = [
  ["peak", "peak live bytes"],
  ["leaked", "leaked bytes"],
  ["growth", "growth, bytes per iteration"],
  ["retained", "peak dead-but-held bytes"],
];

export function siteWeight(site, measure) {
  switch (measure) {
    case "peak": return Math.max(site.peak_live_bytes, 0);
    case "leaked": return Math.max(site.leaked_bytes, 0);
    case "growth": return site.verdict === "growth" && site.growth.slope_bytes_per_iteration > 0 ? Math.round(site.growth.slope_bytes_per_iteration) : 0;
    case "retained": return Math.max(site.retained.peak_dead_bytes, 0);
    default: return 0;
  }
}

// A demangled name without its parameter list and namespaces of tleak's own anonymous scopes.
export function shortFunction(name) {
  if (!name) return "";
  let depth = 0, cut = name.length;
  for (let i = name.length - 1; i >= 0; --i) {
    if (name[i] === ")") ++depth;
    else if (name[i] === "(" && --depth === 0) { cut = i; break; }
  }
  // Keep "(...)" off only when the parentheses close the name (not an operator() or a lambda).
  const base = cut > 0 && name.endsWith(")") ? name.slice(0, cut) : name;
  return base.replace(/\(anonymous namespace\)::/g, "");
}

export function frameName(frame) {
  // No symbol covers it (a stripped module, or one tleak could not read: "?? (why)"): its place in
  // its module, as the text summary says it; under one "??" every such frame of a module would merge
  // into one node.
  const unnamed = !frame.function || frame.function === "??" || frame.function.startsWith("?? (");
  if (unnamed && frame.module) return `${frame.module}+0x${(frame.offset || 0).toString(16)}`;
  const where = frame.file ? ` (${frame.file.split("/").pop()}:${frame.line})` : frame.module ? ` (${frame.module})` : "";
  return `${shortFunction(frame.function) || "??"}${where}`;
}

// A verdict's rank, worst highest (the classifier's order: leak, growth, retained, bounded).
export function severity(verdict) {
  return ["bounded", "retained", "growth", "leak"].indexOf(verdict);
}

// The sites a chart draws, largest peak first: the first `n` found leaking, growing or retaining
// (a report lists its sites worst first, each verdict by its own figure), or without any, the `n`
// largest. Not the largest whatever their verdict: a PyTorch program's import made the five
// largest, and its growing sites were neither drawn nor fitted.
export function chartedSites(sites, n) {
  const flagged = sites.filter((s) => s.verdict !== "bounded");
  const chosen = flagged.length > 0 ? flagged.slice(0, n) : [...sites].sort((a, b) => b.peak_live_bytes - a.peak_live_bytes).slice(0, n);
  return chosen.sort((a, b) => b.peak_live_bytes - a.peak_live_bytes);
}

// The fitted growth line over the iterations it was fitted on: the reported slope, through the
// median of (live - slope * iteration) there (the Theil-Sen intercept); null elsewhere.
export function growthFit(site, iterations) {
  const g = site.growth;
  if (site.verdict !== "growth" || !(g.slope_bytes_per_iteration > 0) || g.first_iteration == null) return null;
  const inWindow = (it) => it >= g.first_iteration && it <= g.last_iteration;
  const offsets = [];
  iterations.forEach((it, i) => { if (inWindow(it)) offsets.push(site.live_bytes_at_samples[i] - g.slope_bytes_per_iteration * it); });
  if (offsets.length === 0) return null;
  offsets.sort((a, b) => a - b);
  const mid = offsets.length >> 1;
  const intercept = offsets.length % 2 ? offsets[mid] : (offsets[mid - 1] + offsets[mid]) / 2;
  return iterations.map((it) => (inWindow(it) ? intercept + g.slope_bytes_per_iteration * it : null));
}
