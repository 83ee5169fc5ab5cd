// The diff page: two runs' live bytes overlaid, the sites that regressed first with their figures
// before and after, and a differential flame graph (widths from the second run, colour by change).
import uPlot from "uplot";
import { select } from "d3-selection";
import flamegraph, { colorMapper } from "d3-flame-graph";
import { bytes, byteRate, byteTicks, counted, siteWeight, MEASURES, stepWords, WHOLE_STEPS } from "./report_model.js";
import { reportFromPageData } from "./page_data.js";
import { stackTree } from "./stack_tree.js";
import { matchingKeys } from "./site_matching.js";
import { el, figureList } from "./dom.js";

// One tree of stacks: widths from the second run (the first's for a site that is gone), and each
// site's change of the measure as the delta of its innermost frame. A site one run does not list,
// where that run left bounded sites out, may be among them: by peak it changed only by what its
// peak exceeds the largest left out there (the other measures those sites have none of). A frame
// with a site A lists is `listedInA`: d3-flame-graph colours a frame whose change is all of its
// width as new in B, which a site A lists with nothing of the measure (a growth from zero) is not.
export function differentialTree(a, b, measure) {
  const keys = matchingKeys(a, b);
  const before = new Map();
  for (const site of a.sites) before.set(keys.get(site), (before.get(keys.get(site)) || 0) + siteWeight(site, measure));
  const unlistedAtMost = (report) => (measure === "peak" && report.omitted_sites.sites > 0 ? report.omitted_sites.largest_peak_live_bytes : 0);
  const entries = [], deltas = new Map(), seen = new Set();
  for (const site of b.sites) {
    const key = keys.get(site), weight = siteWeight(site, measure);
    const was = seen.has(key) ? 0 : before.has(key) ? before.get(key) : Math.min(weight, unlistedAtMost(a));
    deltas.set(site, weight - was);
    entries.push([site, weight]);
    seen.add(key);
  }
  for (const site of a.sites) {
    const key = keys.get(site);
    if (seen.has(key)) continue;
    const weight = before.get(key) || 0;
    deltas.set(site, -(weight - Math.min(weight, unlistedAtMost(b))));
    entries.push([site, weight]);
    seen.add(key);
  }
  const changed = entries.filter(([site, weight]) => weight > 0 || deltas.get(site) !== 0);
  const root = stackTree(changed, (node, site) => {
    node.delta = (node.delta || 0) + deltas.get(site);
    if (before.has(keys.get(site))) node.listedInA = true;
  });
  const markListed = (node) => {
    for (const child of node.children) if (markListed(child)) node.listedInA = true;
    return node.listedInA === true;
  };
  markListed(root);
  return root;
}

// d3-flame-graph's differential colours (red grew, blue shrank, orange all new in B), but full red
// for a frame all of whose change is new though A lists a site of it.
const NEW_IN_B = "rgb(255,190,90)", ALL_GREW = "rgb(220,0,0)";
function diffColor(d, original) {
  const colour = colorMapper.differentialColorMapper(d, original);
  return colour === NEW_IN_B && d.data.listedInA ? ALL_GREW : colour;
}

// A line per run that left bounded sites out of its report: a site the other run lists may be
// among them (shown "not listed in A" or "in B").
function leftOut(listed) {
  return ["a", "b"].filter((side) => listed[side].left_out > 0).map((side) => el("p", { class: "hint", id: `diff-left-out-${side}` },
    `${side.toUpperCase()} lists ${counted(listed[side].sites, "site", "sites")} and leaves out ` +
    `${counted(listed[side].left_out, "smaller bounded one", "smaller bounded ones")} ` +
    `${listed[side].left_out === 1 ? "(at most" : "(each at most"} ${bytes(listed[side].left_out_largest_peak_bytes)} at peak): a site the other run lists may be among them ` +
    `("not listed in ${side.toUpperCase()}"). tleak run --max-sites lists more.`));
}

export function renderDiff(data) {
  const { diff } = data;
  const a = reportFromPageData(data.a), b = reportFromPageData(data.b);
  const name = (r) => (r.run.program ? r.run.program.command.join(" ") : `${r.run.scenario} (${r.run.variant}, ${r.run.mode})`);
  document.title = `tleak diff: ${name(a)} vs ${name(b)}`;
  document.getElementById("report-page").hidden = true;
  const page = document.getElementById("diff-page");
  page.hidden = false;

  const t = diff.totals;
  const pair = (x, f = bytes) => `${f(x.a)} → ${f(x.b)}`;
  // What each run's series are per: iterations, or a program's time samples (step_words.h).
  const wordsA = stepWords(a.run), wordsB = stepWords(b.run);
  const same = wordsA.per === wordsB.per;
  // A figure a run did not measure is unknown, not zero: a program's run sees no uses of its blocks
  // (dead-but-held bytes "not measured"), and one without an exit scan left its blocks unjudged
  // (leaks "not judged"; a diff written before tleak said so has no leaks_judged).
  const knownPair = (x, known, unknown) => `${known.a ? bytes(x.a) : unknown} → ${known.b ? bytes(x.b) : unknown}`;
  const leaksJudged = t.leaks_judged ?? { a: true, b: true };
  const rates = (x) => `${x.a == null ? "-" : byteRate(x.a, wordsA)} → ${x.b == null ? "-" : byteRate(x.b, wordsB)}`;
  page.append(
    el("h1", {}, "tleak diff"),
    el("p", { class: `sentence verdict-${diff.counts.regressions > 0 ? "growth" : "bounded"}`, id: "diff-sentence" },
      `${diff.counts.regressions} regression(s): ${diff.counts.changed} site(s) changed, ${diff.counts.new} new, ${diff.counts.gone} gone` +
      (diff.counts.unlisted ? `, ${diff.counts.unlisted} listed in one run only` : "")),
    ...leftOut(diff.listed),
    figureList([["before (A)", name(a)], ["after (B)", name(b)], ["peak live", pair(t.peak_live_bytes)],
      [`live at last ${same ? wordsB.one : "sample"}`, pair(t.final_live_bytes)], ["leaked", knownPair(t.leaked_bytes, leaksJudged, "not judged")],
      ["growth", rates(t.growth_bytes_per_iteration)], ["dead-held peak", knownPair(t.retained_peak_bytes, t.retained_measured, "not measured")]]),
    el("h2", {}, same ? `Live bytes per ${wordsB.one === "sample" ? `${wordsB.per} sample` : "iteration"}, both runs` : "Live bytes per step of each run (A and B are sampled differently)"),
    el("div", { id: "diff-timeline", class: "chart" }),
    el("h2", {}, "Sites, regressions first"),
    el("table", { class: "sites", id: "diff-sites" }),
    el("h2", {}, "Differential flame graph"),
    el("div", { class: "controls" },
      el("label", {}, "weight ", el("select", { id: "diff-measure" }, ...MEASURES.map(([v, title]) =>
        el("option", { value: v }, v === "growth" ? (same ? `growth, bytes per ${wordsB.per}` : "growth, bytes per step") : title)))),
      el("span", { class: "hint" }, "Widths: run B (run A for a site that is gone). Red: grew from A to B; blue: shrank; orange: all of it is new in B (a site not listed in A changed by at least what its peak exceeds the largest A left out). Click a frame to zoom.")),
    el("div", { id: "diff-flame", class: "chart" }));

  // Overlaid timelines on one iteration axis (runs of different lengths leave gaps).
  const iterations = [...new Set([...a.timeline.samples, ...b.timeline.samples].map((s) => s.iteration))].sort((x, y) => x - y);
  const at = (r) => { const m = new Map(r.timeline.samples.map((s) => [s.iteration, s.live_bytes])); return iterations.map((i) => m.get(i) ?? null); };
  if (iterations.length > 0) {
    new uPlot({
      width: Math.max(480, document.getElementById("diff-timeline").clientWidth || 900), height: 280, scales: { x: { time: false } },
      series: [{ label: same ? wordsB.one : "step" }, { label: "A live", stroke: "#1f77b4", value: (u, v) => bytes(v) }, { label: "B live", stroke: "#d62728", value: (u, v) => bytes(v) }],
      axes: [{ label: same ? wordsB.one : "step", incrs: WHOLE_STEPS }, { values: (u, vals) => byteTicks(vals), size: 80 }],
    }, [iterations, at(a), at(b)], document.getElementById("diff-timeline"));
  }

  // A side that does not list a site (it left bounded sites out) has its peak only as a bound.
  const peakPair = (s) => {
    const side = (v) => (v == null ? `≤ ${bytes(s.unlisted_peak_at_most)}` : bytes(v));
    return `${side(s.peak_live_bytes.a)} → ${side(s.peak_live_bytes.b)}`;
  };
  const statusText = { unlisted_a: "not listed in A", unlisted_b: "not listed in B" };
  const head = ["status", "site", "verdict", "peak", "leaked", same ? `growth / ${wordsB.per}` : "growth", "dead-held peak", "regressions"];
  // Regressions come first (tleak diff's order); a diff of 100,000 sites draws the first rows only.
  const kShownRows = 500;
  const rows = diff.sites.slice(0, kShownRows).map((s) => el("tr", { class: `row status-${s.status}${s.regressions.length ? " regressed" : ""}` },
    el("td", {}, statusText[s.status] ?? s.status), el("td", { class: "text-site", title: s.label }, s.label),
    el("td", {}, `${s.verdict.a || "-"} → ${s.verdict.b || "-"}`),
    el("td", {}, peakPair(s)), el("td", {}, knownPair(s.leaked_bytes, leaksJudged, "not judged")),
    el("td", {}, rates(s.growth_bytes_per_iteration)), el("td", {}, knownPair(s.retained_peak_bytes, t.retained_measured, "-")),
    el("td", {}, s.regressions.map((r) => r.kind).join(", "))));
  document.getElementById("diff-sites").replaceChildren(el("thead", {}, el("tr", {}, ...head.map((h) => el("th", h === "site" ? { class: "text-site" } : {}, h)))), el("tbody", {}, ...rows));
  document.getElementById("diff-sites").before(el("p", { class: "hint", id: "diff-sites-count" },
    diff.sites.length > kShownRows ? `showing the first ${kShownRows} of ${diff.sites.length} sites` : `${diff.sites.length} sites`));

  const measureSelect = document.getElementById("diff-measure");
  measureSelect.value = t.growth_bytes_per_iteration.b !== t.growth_bytes_per_iteration.a ? "growth" : "peak";
  const draw = () => {
    const host = document.getElementById("diff-flame");
    host.replaceChildren();
    const root = differentialTree(a, b, measureSelect.value);
    if (root.value === 0) {
      host.textContent = "No site has a non-zero weight for this measure in either run.";
      return;
    }
    const chart = flamegraph().width(Math.max(480, host.clientWidth || 900)).cellHeight(18).inverted(true).minFrameSize(1)
      .transitionDuration(0).sort(true).computeDelta(true).setColorMapper(diffColor)
      .label((d) => `${d.data.name}: ${bytes(d.value)} in B, ${d.delta >= 0 ? "+" : ""}${bytes(d.delta)} from A`);
    select(host).datum(root).call(chart);
  };
  measureSelect.addEventListener("input", draw);
  draw();
}
