// tleak's pages: reads the data embedded in the page, a report (the header, the live-bytes timeline
// with uPlot, the sites table, the flame graph with d3-flame-graph and a site's detail) or a diff
// of two reports (diff_page.js). No request leaves the page: the libraries are bundled in and the
// data is inline.
import uPlot from "uplot";
import { select } from "d3-selection";
import flamegraph from "d3-flame-graph";
import { bytes, byteRate, counted, frameName, shortFunction, siteWeight, MEASURES, growthFit, chartedSites, severity, stepWords, byteTicks, WHOLE_STEPS } from "./report_model.js";
import { el, figures as figureNodes } from "./dom.js";
import { stackTree } from "./stack_tree.js";
import { renderDiff } from "./diff_page.js";
import { reportFromPageData } from "./page_data.js";

// Marks for the page benchmark (bench/page_load.mjs): how long each part of opening the page took.
performance.mark("tleak-start");
const data = JSON.parse(document.getElementById("tleak-report").textContent);
performance.mark("tleak-parsed");
const report = data.page_data ? reportFromPageData(data) : null;
if (report) performance.mark("tleak-hydrated");  // a diff page rebuilds its two reports later
window.tleak = { report };  // for the console, and for the browser test's round-trip check
// What the series' steps are called: iterations, or time samples of a program without marks.
const words = stepWords(report ? report.run : null);
const $ = (id) => document.getElementById(id);

function header() {
  const run = report.run;
  const what = run.program ? run.program.command.join(" ") : `${run.scenario} (${run.variant}, ${run.mode})`;
  document.title = `tleak: ${what}`;
  $("title").textContent = what;
  $("sentence").textContent = report.summary.sentence;
  $("sentence").className = `sentence verdict-${report.summary.verdict}`;
  const t = report.totals;
  const figures = [
    ["verdict", report.summary.verdict],
    run.program && run.program.clock === "time"
      ? ["samples", `${run.iterations}, one every ${words.per} (the program did not mark iterations)`]
      : ["iterations", `${run.iterations}${run.program ? ` (clock: ${run.program.clock})` : ""}`],
    ["peak live", bytes(t.peak_live_bytes)],
    // A program's allocator keeps a reserve tleak does not see (null in its report).
    ...(t.peak_reserved_bytes == null ? [] : [["peak reserved", bytes(t.peak_reserved_bytes)]]),
    ["leaked", `${bytes(t.leaked_bytes)} in ${t.leaked_blocks} block(s)`],
    // A program's uses are not seen: its dead-but-held bytes are unknown, not zero.
    ["dead-but-held peak", report.total_retained.measured ? bytes(report.total_retained.peak_dead_bytes) : "not measured (no uses seen: tleak does not see a program's)"],
    ["sites", `${report.sites.length}${report.omitted_sites.sites ? ` (+${report.omitted_sites.sites} omitted)` : ""}`],
  ];
  if (run.program) {
    figures.splice(figures.findIndex(([name]) => name === "leaked") + 1, 0, ...atExit(t, run.program.exit_scan));
    // tleak run --record: the report is of one of the command's processes, whose exit status the
    // figure below is not.
    if (run.program.record) figures.push(["recorded", `${run.program.record} (pid ${run.program.pid}), the first of the command's processes to run it`]);
    if (run.program.forked_copy) figures.push(["recorded", `a forked copy (pid ${run.program.pid}), from its first allocation on`]);
    figures.push([run.program.record || run.program.forked_copy ? "the command's exit" : "exit", howItEnded(run.program)]);
  }
  $("totals").replaceChildren(...figureNodes(figures));
  $("thresholds").replaceChildren(
    ...Object.entries(report.thresholds).map(([k, v]) => el("tr", {}, el("td", {}, k), el("td", {}, String(v)))));
  $("notes").replaceChildren(...report.notes.map((n) => el("li", {}, n)));
}

// Linux's names of the signals a program is killed by, as tleak's summary gives them
// ("killed by SIGTERM"); others by number.
const SIGNAL_NAMES = ["", "SIGHUP", "SIGINT", "SIGQUIT", "SIGILL", "SIGTRAP", "SIGABRT", "SIGBUS", "SIGFPE", "SIGKILL",
  "SIGUSR1", "SIGSEGV", "SIGUSR2", "SIGPIPE", "SIGALRM", "SIGTERM"];

function howItEnded(program) {
  if (program.stopped_by) return `stopped by --${program.stopped_by}`;
  if (program.exit_signal) return `killed by ${SIGNAL_NAMES[program.exit_signal] ?? `signal ${program.exit_signal}`}`;
  return `status ${program.exit_status}`;
}

// What a program left allocated at exit beside its leaks: reachable (an exit scan judged them), and
// not judged (no scan, or allocated by a thread still running after the scan's list was made).
function atExit(figures, scanned) {
  const out = [];
  if (scanned) out.push(["reachable at exit", `${bytes(figures.reachable_at_exit_bytes)} in ${figures.reachable_at_exit_blocks} block(s)`]);
  if (!scanned || figures.unjudged_at_exit_bytes > 0) {
    out.push(["not judged at exit", `${bytes(figures.unjudged_at_exit_bytes)} in ${figures.unjudged_at_exit_blocks} block(s)`]);
  }
  return out;
}

// The charted sites' bands are too thin to read under a total this many times their top.
const kFlatShare = 20;

// Live bytes per iteration: the total, the top sites, reserved bytes per allocator, the warm-up
// shaded, plateaus marked, and the fitted line over each growing top site.
function timeline() {
  if (words.one === "sample") $("timeline-title").textContent = `Live bytes per ${words.per} sample`;
  const samples = report.timeline.samples;
  const host = $("timeline");
  if (samples.length === 0) {
    host.textContent = `No samples: the run ended before its first ${words.one === "sample" ? "time sample" : "iteration mark"}.`;
    return;
  }
  const x = samples.map((s) => s.iteration);
  const series = [{ label: words.one }, { label: "total live", stroke: "#222", width: 2, value: (u, v) => bytes(v) }];
  const data = [x, samples.map((s) => s.live_bytes)];
  const palette = ["#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"];
  // The sites found leaking, growing or retaining (or the largest) stacked, largest at the bottom:
  // each band is one site's live bytes (the legend shows its own figure), and a growing site's
  // fitted line rides on the bands below it.
  const top = chartedSites(report.sites, 5).filter((site) => site.live_bytes_at_samples);
  const bands = [];
  let below = samples.map(() => 0), belowSeries = null;
  top.forEach((site, i) => {
    const own = site.live_bytes_at_samples;
    const stacked = own.map((v, k) => below[k] + v);
    series.push({ label: `#${site.id} ${site.label}`, stroke: palette[i], fill: `${palette[i]}33`, value: (u, v, si, k) => (k == null ? "" : bytes(own[k])) });
    data.push(stacked);
    const index = series.length - 1;
    if (belowSeries != null) bands.push({ series: [index, belowSeries], fill: `${palette[i]}33` });
    const fit = growthFit(site, x);
    if (fit) {
      const base = below;
      series.push({ label: `fit #${site.id} (${byteRate(site.growth.slope_bytes_per_iteration, words)})`, stroke: palette[i], dash: [6, 4], width: 1, value: (u, v, si, k) => (k == null || fit[k] == null ? "" : bytes(fit[k])) });
      data.push(fit.map((v, k) => (v == null ? null : base[k] + v)));
    }
    below = stacked;
    belowSeries = index;
  });
  // Only the first band fills down to zero; the others fill between their site and the one below.
  series.forEach((s, i) => { if (s.fill && bands.some((b) => b.series[0] === i)) delete s.fill; });
  // Sites found leaking or growing that are small beside the total (a PyTorch program's 64 MiB
  // against its growing sites' 200 KiB) would lie flat along the axis: the total and the reserved
  // bytes start hidden then, and a line says so (a click on the legend shows them).
  const most = (values) => values.reduce((m, v) => Math.max(m, v ?? 0), 0);
  const flat = top.some((s) => s.verdict !== "bounded") && most(below) * kFlatShare < most(data[1]);
  if (flat) series[1].show = false;
  $("timeline-note").textContent = flat
    ? `The total is hidden, as is any reserved line: beside it (${bytes(most(data[1]))} at its highest sample) these ` +
      `sites (${bytes(most(below))} together at theirs) would lie flat. Click "total live" in the legend to show it.`
    : "";
  const names = (report.totals.allocators || []).map((a) => a.name);
  names.forEach((name, a) => {
    const reserved = samples.map((s) => (s.allocator_reserved_bytes || [])[a] ?? null);
    const live = samples.map((s) => (s.allocator_live_bytes || [])[a] ?? 0);
    // Reserved bytes of an allocator nothing lives in (a device reservation) would flatten the chart.
    if (!live.some((v) => v > 0) || !reserved.some((v) => v > 0)) return;
    series.push({ label: `${name} reserved`, stroke: "#999", dash: [2, 3], show: !flat, value: (u, v) => bytes(v) });
    data.push(reserved);
  });
  const warmupEnd = Math.max(report.thresholds.min_warmup_iterations, Math.floor(report.thresholds.warmup_fraction * report.run.iterations));
  const plateaus = top.filter((s) => s.growth.plateau_iteration != null).map((s) => s.growth.plateau_iteration);
  const marks = {
    hooks: {
      draw: [(u) => {
        const ctx = u.ctx;
        const { top: t, height } = u.bbox;
        ctx.save();
        ctx.fillStyle = "rgba(120,120,120,0.12)";
        const x0 = u.valToPos(x[0], "x", true), x1 = u.valToPos(Math.min(warmupEnd, x[x.length - 1]), "x", true);
        ctx.fillRect(x0, t, Math.max(0, x1 - x0), height);
        ctx.strokeStyle = "#444";
        ctx.setLineDash([3, 3]);
        for (const p of plateaus) {
          const px = u.valToPos(p, "x", true);
          ctx.beginPath(); ctx.moveTo(px, t); ctx.lineTo(px, t + height); ctx.stroke();
        }
        ctx.restore();
      }],
    },
  };
  const width = Math.max(480, host.clientWidth || 900);
  new uPlot({
    width, height: 300, series, bands, plugins: [marks],
    scales: { x: { time: false } },
    axes: [{ label: words.one, incrs: WHOLE_STEPS }, { values: (u, vals) => byteTicks(vals), size: 80 }],
  }, data, host);
}

// The sites table: sortable by any column, filtered by verdict, allocator and text. A 100,000-site
// report renders the first rows of the current order only. It opens worst first, as the report lists
// its sites: by verdict (a stable sort keeps the report's order within one).
const kShownRows = 500;
const viaOf = (site) => (report && report.via && report.via[site.id]) || [];
const columns = [
  ["verdict", (s) => severity(s.verdict), (s) => s.verdict],
  // With what tells it from the sites that read alike (the text's via lines), where there are any.
  ["site", (s) => s.label, (s) => [s.label, ...viaOf(s)].join("\n")],
  ["reason", (s) => s.reason || "", (s) => s.reason || ""],
  ["allocator", (s) => s.allocator, (s) => s.allocator],
  ["leaked", (s) => s.leaked_bytes, (s) => bytes(s.leaked_bytes)],
  [`growth / ${words.per}`, (s) => (s.verdict === "growth" ? s.growth.slope_bytes_per_iteration : 0), (s) => (s.verdict === "growth" ? byteRate(s.growth.slope_bytes_per_iteration, words) : "")],
  // A program's report measures no dead-but-held bytes (tleak sees no uses of its blocks): no
  // columns of blanks.
  ...(!report || report.total_retained.measured ? [
    ["dead-held peak", (s) => s.retained.peak_dead_bytes, (s) => (s.retained.measured ? bytes(s.retained.peak_dead_bytes) : "")],
    [`drag (${words.many})`, (s) => s.retained.drag_iterations_max, (s) => (s.retained.measured ? s.retained.drag_iterations_max : "")],
  ] : []),
  ["peak", (s) => s.peak_live_bytes, (s) => bytes(s.peak_live_bytes)],
];
const tableState = { sort: 0, descending: true };
// The columns of text, which share what the figures leave of the page's width and are cut short
// (the whole text in their tooltip) rather than push the table past it.
const wideColumn = (name) => (name === "site" || name === "reason" ? `text-${name}` : undefined);

function sitesTable() {
  const verdicts = ["all", "leak", "growth", "retained", "bounded"];
  $("filter-verdict").replaceChildren(...verdicts.map((v) => el("option", { value: v }, v)));
  const allocators = ["all", ...new Set(report.sites.map((s) => s.allocator))];
  $("filter-allocator").replaceChildren(...allocators.map((v) => el("option", { value: v }, v)));
  for (const id of ["filter-verdict", "filter-allocator", "filter-text"]) $(id).addEventListener("input", renderRows);
  $("sites-head").replaceChildren(el("tr", {}, ...columns.map(([name], i) => el("th", {
    ...(wideColumn(name) ? { class: wideColumn(name) } : {}),
    onclick: () => {
      tableState.descending = tableState.sort === i ? !tableState.descending : i === 0 || i > 3;  // worst, largest first
      tableState.sort = i;
      renderRows();
    },
  }, name))));
  renderRows();
}

// A cell's content: its text; a site's via lines under its label, where it has any (cut short like
// the label, each from its own start: the call that tells it apart comes last).
function cell(name, site, show) {
  if (name !== "site" || viaOf(site).length === 0) return [show(site)];
  return [el("div", {}, site.label), el("div", { class: "via-line" }, viaOf(site).join(" · "))];
}

function renderRows() {
  const verdict = $("filter-verdict").value, allocator = $("filter-allocator").value;
  const text = $("filter-text").value.toLowerCase();
  const [, key] = columns[tableState.sort];
  const rows = report.sites.filter((s) => (verdict === "all" || s.verdict === verdict) &&
    (allocator === "all" || s.allocator === allocator) &&
    (!text || s.label.toLowerCase().includes(text) || s.frames.some((f) => (f.function || "").toLowerCase().includes(text))));
  rows.sort((a, b) => {
    const ka = key(a), kb = key(b);
    const order = typeof ka === "string" ? ka.localeCompare(kb) : ka - kb;
    return tableState.descending ? -order : order;
  });
  $("sites-body").replaceChildren(...rows.slice(0, kShownRows).map((s) => el("tr", { class: `row verdict-${s.verdict}`, "data-site": s.id, onclick: () => detail(s) },
    ...columns.map(([name, , show]) => el("td", wideColumn(name) ? { class: wideColumn(name), title: show(s) } : {}, ...cell(name, s, show))))));
  $("sites-count").textContent = rows.length > kShownRows ? `showing ${kShownRows} of ${rows.length} sites` : `${rows.length} sites`;
  document.querySelectorAll("#sites-head th").forEach((th, i) => th.classList.toggle("sorted", i === tableState.sort));
}

// A site's detail: its figures, its own curve, its stack (innermost first) with file:line.
let detailPlot = null;
function detail(site) {
  const panel = $("detail");
  panel.hidden = false;
  $("detail-title").textContent = `#${site.id} ${site.verdict}: ${site.label}`;
  $("detail-reason").textContent = site.reason;
  $("detail-via").replaceChildren(...viaOf(site).map((via) => el("li", {}, via)));
  const figures = [["allocator", site.allocator], ["peak live", bytes(site.peak_live_bytes)], [`live at last ${words.one}`, bytes(site.final_live_bytes)],
    ["leaked", `${bytes(site.leaked_bytes)} in ${site.leaked_blocks} block(s)`], ["allocations / frees", `${site.allocations} / ${site.frees}`]];
  if (report.run.program) figures.splice(4, 0, ...atExit(site, report.run.program.exit_scan));
  if (site.verdict === "growth") figures.push(["growth", `${byteRate(site.growth.slope_bytes_per_iteration, words)} from ${words.one} ${site.growth.first_iteration}`]);
  if (site.growth.plateau_iteration != null) figures.push(["plateau", `${words.one} ${site.growth.plateau_iteration}`]);
  if (site.retained.measured) figures.push(["dead-held peak", `${bytes(site.retained.peak_dead_bytes)}, drag up to ${counted(site.retained.drag_iterations_max, words.one, words.many)}`]);
  $("detail-figures").replaceChildren(...figureNodes(figures));
  $("detail-stack").replaceChildren(...site.frames.map((f) => el("li", { class: `frame frame-${f.kind || "native"}` },
    el("span", { class: "fn", title: f.function || "" }, shortFunction(f.function) || "??"),
    // A frame's column tells two calls on one line apart (their frames differ only there).
    el("span", { class: "loc" }, f.file ? ` ${f.file}:${f.line}${f.column ? `:${f.column}` : ""}` : ` ${f.module || ""}+0x${(f.offset || 0).toString(16)}`))));
  const samples = report.timeline.samples;
  if (detailPlot) detailPlot.destroy();
  detailPlot = null;
  $("detail-curve").replaceChildren();
  if (samples.length > 0 && !site.live_bytes_at_samples) {
    $("detail-curve").textContent = `This site's curve was left out of the page: of ${report.sites.length} sites it keeps the curves of ` +
      `${report.sites.length - report.curves_left_out} (every site not bounded first, then the largest peaks). The JSON report has it.`;
  } else if (samples.length > 0) {
    detailPlot = new uPlot({
      width: Math.max(360, $("detail-curve").clientWidth || 600), height: 160, scales: { x: { time: false } },
      series: [{ label: words.one }, { label: "live", stroke: "#d62728", value: (u, v) => bytes(v) }],
      axes: [{ incrs: WHOLE_STEPS }, { values: (u, vals) => byteTicks(vals), size: 80 }],
    }, [samples.map((s) => s.iteration), site.live_bytes_at_samples], $("detail-curve"));
  }
  panel.scrollIntoView({ block: "nearest" });
}

// The flame graph (an icicle, roots on top) of the sites' stacks, weighted by the chosen measure.
let chart = null;
function flame() {
  $("measure").replaceChildren(...MEASURES.map(([value, title]) =>
    el("option", { value }, value === "growth" ? `growth, bytes per ${words.per}` : title)));
  const initial = report.summary.verdict === "leak" ? "leaked" : report.summary.verdict === "growth" ? "growth" : report.summary.verdict === "retained" ? "retained" : "peak";
  $("measure").value = initial;
  $("measure").addEventListener("input", drawFlame);
  $("flame-search").addEventListener("input", () => chart && chart.search($("flame-search").value));
  $("flame-reset").addEventListener("click", () => chart && chart.resetZoom());
  drawFlame();
}

function drawFlame() {
  const measure = $("measure").value;
  // The sites the report left out are bounded: only the peak measure misses them.
  const omitted = report.omitted_sites;
  $("flame-note").textContent = measure === "peak" && omitted.sites > 0
    ? (omitted.sites === 1
      ? `The smaller bounded site the report left out (at most ${bytes(omitted.largest_peak_live_bytes)} at peak) is not in it: `
      : `The ${omitted.sites} smaller bounded sites the report left out (each at most ${bytes(omitted.largest_peak_live_bytes)} ` +
        `at peak) are not in it: `) + `the widths are the peaks of the ${counted(report.sites.length, "listed site", "listed sites")}.`
    : "";
  const root = stackTree(report.sites.map((site) => [site, siteWeight(site, measure)]));
  const host = $("flame");
  host.replaceChildren();
  if (root.value === 0) {
    host.textContent = "No site has a non-zero weight for this measure.";
    chart = null;
    return;
  }
  chart = flamegraph().width(Math.max(480, host.clientWidth || 900)).cellHeight(18).inverted(true).minFrameSize(1)
    .transitionDuration(0).selfValue(false).sort(true)
    .label((d) => `${d.data.name}: ${measure === "growth" ? byteRate(d.value, words) : bytes(d.value)}`)
    // Plain text, not a regular expression: frame names are full of parentheses and colons.
    .setSearchMatch((d, term) => term !== "" && d.data.name.toLowerCase().includes(term.toLowerCase()));
  select(host).datum(root).call(chart);
}

if (report) {
  header();
  timeline();
  performance.mark("tleak-timeline");
  sitesTable();
  performance.mark("tleak-table");
  flame();
  performance.mark("tleak-flame");
} else {
  renderDiff(data);
}
document.body.dataset.ready = "true";
