// Opens tleak's report pages in real headless Chromium (Debian's) and checks what a user sees: the
// verdict sentence, one row per site, a chart that drew, a flame graph whose click zooms, a site's
// detail, no console error and no request beyond the page itself; and a diff page (regressions
// first, both timelines, a differential flame graph). Saves a screenshot of each page.
//
// Usage: node page_test.mjs TLEAK_BINARY WEB_DIR OUTPUT_DIR [GROWTH_PROGRAM]   (WEB_DIR holds
// node_modules; GROWTH_PROGRAM, tests/programs/growth.c built, adds the page of a program's report)
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import path from "node:path";
import assert from "node:assert/strict";
import { bytes as bytesOf } from "../../web/src/report_model.js";

const [tleak, webDir, outArg, growthProgram] = process.argv.slice(2);
const outDir = outArg && path.resolve(outArg);
if (!tleak || !webDir || !outDir) throw new Error("usage: node page_test.mjs TLEAK_BINARY WEB_DIR OUTPUT_DIR");
const puppeteer = createRequire(path.resolve(webDir, "package.json"))("puppeteer-core");
mkdirSync(outDir, { recursive: true });
const chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find((p) => { try { readFileSync(p); return true; } catch { return false; } });
if (!chromium) {
  console.log("SKIP: no chromium (scripts/setup installs Debian's)");
  process.exit(77);
}

function page_for(scenario, variant, extra = []) {
  const json = path.join(outDir, `${scenario}-${variant}.json`), html = path.join(outDir, `${scenario}-${variant}.html`);
  execFileSync(tleak, ["run", scenario, "--variant", variant, "-o", json, "--html", html, "--format", "text", ...extra]);
  return { report: JSON.parse(readFileSync(json, "utf8")), html };
}

const browser = await puppeteer.launch({
  executablePath: chromium, headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--disable-background-networking"],
});
let failures = 0;
const zooms = [];
async function check(name, body) {
  try {
    await body();
    console.log(`PASS ${name}`);
  } catch (e) {
    ++failures;
    console.log(`FAIL ${name}: ${e.stack || e}`);
  }
}

async function open(html) {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 900 });
  const errors = [], requests = [];
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  page.on("pageerror", (e) => errors.push(String(e)));
  const url = pathToFileURL(html).href;
  page.on("request", (r) => { if (r.url() !== url) requests.push(r.url()); });
  await page.goto(url, { waitUntil: "load" });
  await page.waitForSelector("body[data-ready=true]", { timeout: 10000 });
  return { page, errors, requests };
}

// The page fits its window's width: nothing, the sites table included, makes it scroll sideways.
async function assertFitsWidth(page) {
  const { scroll, client, wide } = await page.evaluate(() => ({
    scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth,
    wide: [...document.querySelectorAll("body *")].filter((e) => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
      .slice(0, 5).map((e) => `${e.tagName}#${e.id}.${e.className}`),
  }));
  assert.ok(scroll <= client, `the page is ${scroll} px wide in a window of ${client} px: ${wide}`);
}

for (const [scenario, variant] of [["append-loop", "leaky"], ["custom-op-scratch", "leaky"], ["constant-list", "leaky"], ["clean-loop", "fixed"]]) {
  const { report, html } = page_for(scenario, variant);
  await check(`${scenario} ${variant}`, async () => {
    const { page, errors, requests } = await open(html);
    assert.equal(await page.$eval("#sentence", (e) => e.textContent), report.summary.sentence);
    assert.ok((await page.$eval("#totals", (e) => e.textContent)).includes(`peak reserved${bytesOf(report.totals.peak_reserved_bytes)}`));
    // The sites the page rebuilt from its columns are the report's, field for field.
    const { curves_left_out, via, sites, ...rest } = await page.evaluate(() => window.tleak.report);
    assert.equal(curves_left_out, 0);
    assert.deepEqual(via, {});  // no two sites read alike
    assert.deepEqual(sites, report.sites);
    assert.deepEqual(rest, Object.fromEntries(Object.entries(report).filter(([k]) => k !== "sites")));
    assert.equal(await page.$$eval("#sites-body tr", (rows) => rows.length), report.sites.length);
    // The timeline's canvas has pixels drawn on it.
    const inked = await page.$eval("#timeline canvas", (c) => {
      const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 3; i < d.length; i += 4) if (d[i] !== 0) ++n;
      return n;
    });
    assert.ok(inked > 500, `timeline canvas has ${inked} drawn pixels`);
    // The flame graph by peak live bytes: frames for every stack, and a click on a narrow frame
    // zooms it to (nearly) the full width.
    await page.select("#measure", "peak");
    const frames = await page.$$eval("#flame svg g.frame", (g) => g.length);
    assert.ok(frames >= 2, `${frames} flame graph frames`);
    const deepest = await page.$$eval("#flame svg g.frame", (gs) => {
      let best = 0, width = Infinity;
      gs.forEach((g, i) => { const w = g.getBBox().width; if (w > 2 && w < width) { width = w; best = i; } });
      return { best, width };
    });
    const fullWidth = await page.$eval("#flame svg", (s) => s.getBBox().width);
    if (report.sites.filter((site) => site.peak_live_bytes > 0).length > 1) {
      assert.ok(deepest.width < fullWidth * 0.9, `the narrowest frame is ${deepest.width} of ${fullWidth} px`);
      await page.$$eval("#flame svg g.frame", (gs, i) => gs[i].dispatchEvent(new MouseEvent("click", { bubbles: true })), deepest.best);
      const zoomed = await page.$$eval("#flame svg g.frame", (gs, i) => gs[i].getBBox().width, deepest.best);
      assert.ok(zoomed > fullWidth * 0.9, `clicked frame went from ${deepest.width} to ${zoomed} of ${fullWidth} px`);
      zooms.push(scenario);
    }
    // Searching paints the frames whose name matches (d3-flame-graph's highlight), and only those.
    await page.type("#flame-search", "main (");
    const painted = await page.$$eval("#flame svg g.frame", (gs) => gs.map((g) => [g.textContent, g.querySelector("rect").getAttribute("fill")]));
    const highlighted = painted.filter(([, fill]) => fill === "#E600E6").map(([text]) => text);
    assert.ok(highlighted.length >= 1 && highlighted.every((t) => t.startsWith("main (")), `highlighted: ${highlighted}`);
    // A row's detail: its stack, innermost frame first.
    await page.click("#sites-body tr");
    assert.equal(await page.$eval("#detail", (d) => d.hidden), false);
    assert.ok(await page.$$eval("#detail-stack li", (l) => l.length) >= 1);
    // Filtering by verdict leaves only that verdict's rows.
    await page.select("#filter-verdict", report.summary.verdict);
    const shown = await page.$$eval("#sites-body tr", (rows) => rows.length);
    assert.equal(shown, report.sites.filter((s) => s.verdict === report.summary.verdict).length);
    await assertFitsWidth(page);
    await page.screenshot({ path: path.join(outDir, `${scenario}-${variant}.png`), fullPage: true });
    assert.deepEqual(errors, [], "console errors");
    assert.deepEqual(requests, [], "requests beyond the page");
    await page.close();
  });
}

// A diff of a run with itself whose one site's lines moved (a rebuild): the flame graph matches the
// moved site as tleak diff does, so no frame is coloured as changed.
{
  const same = path.join(outDir, "append-loop-leaky.json"), moved = path.join(outDir, "append-loop-moved.json");
  const report = JSON.parse(readFileSync(same, "utf8"));
  const growing = report.sites.find((s) => s.verdict === "growth");
  for (const frame of growing.frames) if (frame.line) frame.line += 5;
  writeFileSync(moved, JSON.stringify(report));
  const html = path.join(outDir, "diff-moved.html");
  execFileSync(tleak, ["diff", same, moved, "--html", html], { stdio: ["ignore", "ignore", "ignore"] });
  await check("diff page matches a site whose lines moved", async () => {
    const { page, errors } = await open(html);
    await page.select("#diff-measure", "peak");
    const fills = await page.$$eval("#diff-flame svg g.frame rect", (rs) => rs.map((r) => r.getAttribute("fill")));
    assert.ok(fills.length >= 2);
    assert.deepEqual([...new Set(fills)], ["rgb(220,220,220)"], "every frame unchanged");
    await assertFitsWidth(page);
    assert.deepEqual(errors, [], "console errors");
    await page.close();
  });
}

// The page of a program's report (tleak run --html -- PROGRAM): its command in the title, its sites.
if (growthProgram) {
  const json = path.join(outDir, "program.json"), html = path.join(outDir, "program.html");
  execFileSync(tleak, ["run", "-o", json, "--html", html, "--", growthProgram, "leaky"], { stdio: ["ignore", "ignore", "ignore"] });
  const report = JSON.parse(readFileSync(json, "utf8"));
  await check("program page", async () => {
    const { page, errors, requests } = await open(html);
    assert.equal(await page.$eval("#title", (e) => e.textContent), report.run.program.command.join(" "));
    assert.equal(await page.$eval("#sentence", (e) => e.textContent), report.summary.sentence);
    assert.equal(await page.$$eval("#sites-body tr", (rows) => rows.length), report.sites.length);
    assert.ok(await page.$$eval("#flame svg g.frame", (g) => g.length) >= 2);
    // What the exit scan judged beside the leaks: the blocks reachable at exit, as many as the report's.
    const totals = await page.$eval("#totals", (e) => e.textContent);
    assert.ok(report.run.program.exit_scan, "the growth program exits through its exit handlers");
    assert.ok(totals.includes(`reachable at exit`) && totals.includes(`in ${report.totals.reachable_at_exit_blocks} block(s)`), totals);
    assert.ok(!totals.includes("not judged at exit") || report.totals.unjudged_at_exit_blocks > 0, totals);
    // A program's uses are not seen: its dead-but-held bytes are not measured, and not said to be 0.
    assert.ok(report.total_retained.measured === false);
    assert.ok(totals.includes("dead-but-held peaknot measured (no uses seen: tleak does not see a program's)"), totals);
    assert.ok(!totals.includes("reserved"), totals);  // the C library's reserve is not seen
    assert.ok(totals.indexOf("leaked") < totals.indexOf("reachable at exit"), totals);
    // Nor does its sites table have columns for them, which would be blank in every row.
    const headers = await page.$$eval("#sites-head th", (ths) => ths.map((t) => t.textContent));
    assert.deepEqual(headers, ["verdict", "site", "reason", "allocator", "leaked", "growth / iteration", "peak"]);
    // Its growing site is most of the total: both drawn from the start.
    assert.equal(await page.$eval("#timeline-note", (e) => e.textContent), "");
    await assertFitsWidth(page);
    // In a narrower window too: the site and reason are cut short (whole in their tooltips).
    await page.setViewport({ width: 900, height: 900 });
    await assertFitsWidth(page);
    const reason = await page.$eval("#sites-body tr td.text-reason", (td) => ({ title: td.title, text: td.textContent, cut: td.scrollWidth > td.clientWidth }));
    assert.equal(reason.title, reason.text);
    assert.ok(reason.cut, "a growing site's reason fits 900 px whole: the test no longer shows a cut");
    await page.setViewport({ width: 1280, height: 900 });
    await page.screenshot({ path: path.join(outDir, "program.png"), fullPage: true });
    assert.deepEqual(errors, [], "console errors");
    assert.deepEqual(requests, [], "requests beyond the page");
    await page.close();
  });
}

// A Python frame with its column (two calls on one line differ only there): the detail's stack
// gives it after the line, as the text's via line does. The program's report with one such frame
// added, as a Python program's report has them, and a second site like the first but for the call
// on that line it came from: each site's row and detail say which call is its own, quoted from the
// script, as the text's via lines do.
if (growthProgram) {
  const json = path.join(outDir, "program-python.json"), html = path.join(outDir, "program-python.html");
  const script = path.join(outDir, "serve.py");
  writeFileSync(script, "import torch\n\n\nclass Model(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n\n" +
                        "    def forward(self, x):\n        return self.l2(torch.relu(self.l1(x)))\n");
  const report = JSON.parse(readFileSync(path.join(outDir, "program.json"), "utf8"));
  const call = (column, end_column) => ({ column, end_column, file: script, function: "Model.forward", kind: "python",
                                          line: 9, module: script, offset: 0 });
  report.sites[0].frames.push(call(16, 47));
  const inner = structuredClone(report.sites[0]);
  inner.id = Math.max(...report.sites.map((s) => s.id)) + 1;
  inner.frames[inner.frames.length - 1] = call(35, 45);
  report.sites.push(inner);
  writeFileSync(json, JSON.stringify(report));
  execFileSync(tleak, ["view", "-o", html, json], { stdio: ["ignore", "ignore", "ignore"] });
  await check("a Python frame's column in a site's stack, and which call a site's is", async () => {
    const { page, errors } = await open(html);
    const viaLine = async (id) => page.$eval(`#sites-body tr[data-site="${id}"] td.text-site .via-line`, (d) => d.textContent);
    assert.equal(await viaLine(report.sites[0].id), "via self.l2(torch.relu(self.l1(x)))  serve.py:9:16");
    assert.equal(await viaLine(inner.id), "via self.l1(x)  serve.py:9:35");
    await page.click(`#sites-body tr[data-site="${report.sites[0].id}"]`);
    const stack = await page.$$eval("#detail-stack li", (l) => l.map((li) => li.textContent));
    assert.equal(stack.at(-1), `Model.forward ${script}:9:16`);
    // A native frame with debug info has the column its call is at, as the report gives it.
    const frames = report.sites[0].frames;
    assert.ok(frames.some((f) => f.kind !== "python" && f.column > 0), "growth.c's frames have columns");
    assert.deepEqual(stack, frames.map((f) => `${f.function} ${f.file}:${f.line}${f.column ? `:${f.column}` : ""}`));
    assert.deepEqual(await page.$$eval("#detail-via li", (l) => l.map((li) => li.textContent)),
                     ["via self.l2(torch.relu(self.l1(x)))  serve.py:9:16"]);
    // A site that reads like no other has none.
    const other = report.sites.find((s) => s.label !== report.sites[0].label);
    if (other) {
      await page.click(`#sites-body tr[data-site="${other.id}"]`);
      assert.equal(await page.$$eval("#detail-via li", (l) => l.length), 0);
    }
    assert.deepEqual(errors, [], "console errors");
    await page.close();
  });
}

// A growing site smaller than six bounded ones (growth.c's "large": six 1 MiB buffers live through the
// loop), as in a PyTorch program whose import makes the largest sites: the page leads with the
// growing site all the same, first in the table and drawn in the chart with its fitted line, the
// total hidden at first (beside its 6 MiB the site's 120 KiB would lie flat).
if (growthProgram) {
  const json = path.join(outDir, "beside-large.json"), html = path.join(outDir, "beside-large.html");
  execFileSync(tleak, ["run", "-o", json, "--html", html, "--", growthProgram, "leaky", "large"], { stdio: ["ignore", "ignore", "ignore"] });
  const report = JSON.parse(readFileSync(json, "utf8"));
  const growing = report.sites.filter((s) => s.verdict === "growth");
  await check("the worst site leads a page", async () => {
    assert.equal(growing.length, 1);
    const larger = report.sites.filter((s) => s.verdict === "bounded" && s.peak_live_bytes > growing[0].peak_live_bytes);
    assert.ok(larger.length >= 6, `${larger.length} bounded sites larger than the growing one`);
    const { page, errors } = await open(html);
    const firstRow = () => page.$$eval("#sites-body tr:first-child td", (tds) => tds.map((t) => t.textContent));
    const [verdict, label] = await firstRow();
    assert.equal(verdict, "growth");
    assert.equal(label, growing[0].label);
    const legend = await page.$$eval("#timeline .u-legend .u-series .u-label", (ls) => ls.map((l) => l.textContent));
    assert.ok(legend.some((l) => l.startsWith(`#${growing[0].id} `)), `legend: ${legend}`);
    assert.ok(legend.some((l) => l.startsWith(`fit #${growing[0].id} `)), `legend: ${legend}`);
    assert.ok(!legend.some((l) => l.includes(" main (growth.c:") && !l.includes(`#${growing[0].id} `)), `legend: ${legend}`);
    const shown = () => page.$$eval("#timeline .u-legend .u-series", (rows) => rows.map((r) => !r.classList.contains("u-off")));
    const [, totalShown, siteShown] = await shown();
    assert.equal(totalShown, false);
    assert.equal(siteShown, true);
    assert.match(await page.$eval("#timeline-note", (e) => e.textContent), /^The total is hidden, as is any reserved line: beside it \(6\.\d MiB at its highest sample\)/);
    await (await page.$$("#timeline .u-legend .u-series"))[1].click();
    assert.equal((await shown())[1], true);
    // Sorting by another column still works: by peak, a 1 MiB buffer comes first; by verdict again,
    // the worst.
    const headers = await page.$$("#sites-head th");
    const peak = (await page.$$eval("#sites-head th", (ths) => ths.map((t) => t.textContent))).indexOf("peak");
    await headers[peak].click();
    assert.equal((await firstRow())[peak], "1.0 MiB");
    await headers[0].click();
    assert.equal((await firstRow())[0], "growth");
    assert.deepEqual(errors, [], "console errors");
    await page.close();
  });
}

// A diff against a report that left sites out (growth.c fixed, --max-sites 1): the growing site is
// "not listed in A", its peak there only a bound, and a line says what A left out.
if (growthProgram) {
  const fixed = path.join(outDir, "one-site.json"), leaky = path.join(outDir, "program.json");  // growth.c leaky
  const fixedHtml = path.join(outDir, "one-site.html");
  execFileSync(tleak, ["run", "--max-sites", "1", "-o", fixed, "--html", fixedHtml, "--", growthProgram, "fixed"], { stdio: ["ignore", "ignore", "ignore"] });
  const html = path.join(outDir, "unlisted-diff.html");
  execFileSync(tleak, ["diff", fixed, leaky, "--html", html], { stdio: ["ignore", "ignore", "ignore"] });
  await check("diff page of a report that left sites out", async () => {
    const { page, errors } = await open(html);
    assert.match(await page.$eval("#diff-left-out-a", (e) => e.textContent), /^A lists 1 site and leaves out \d+ smaller bounded ones \(each at most 4\.0 KiB at peak\)/);
    assert.equal(await page.$("#diff-left-out-b"), null);
    const cells = await page.$eval("#diff-sites tbody tr", (r) => [...r.querySelectorAll("td")].map((t) => t.textContent));
    assert.equal(cells[0], "not listed in A");
    assert.equal(cells[2], "- → growth");
    assert.equal(cells[3], "≤ 4.0 KiB → 120.0 KiB");
    assert.match(await page.$eval("#diff-sentence", (e) => e.textContent), /, \d+ listed in one run only$/);
    assert.ok((await page.$eval("#diff-page", (e) => e.textContent)).includes("dead-held peaknot measured → not measured"));
    assert.equal(cells[6], "- → -");
    // By growth (the page's choice: B grows), the growing site is all new in B: A does not list it,
    // and what A left out has no growth. Orange.
    assert.equal(await page.$eval("#diff-measure", (s) => s.value), "growth");
    const byGrowth = await page.$$eval("#diff-flame svg g.frame", (gs) => gs.map((g) => [g.textContent, g.querySelector("rect").getAttribute("fill")]));
    const newSite = byGrowth.find(([text]) => text.startsWith("main (growth.c:"));
    assert.ok(newSite, `frames: ${byGrowth.map(([t]) => t)}`);
    assert.equal(newSite[1], "rgb(255,190,90)");
    // By peak, no frame is "all of it new in B" (d3-flame-graph's orange): B's sites that A does not
    // list changed by what they exceed A's largest left-out peak at most (the growing site, 116 KiB
    // of its 120 KiB: red), or not at all.
    await page.select("#diff-measure", "peak");
    const fills = await page.$$eval("#diff-flame svg g.frame", (gs) => gs.map((g) => [g.textContent, g.querySelector("rect").getAttribute("fill")]));
    assert.ok(fills.length >= 2);
    assert.deepEqual(fills.filter(([, fill]) => fill === "rgb(255,190,90)"), []);
    const grown = fills.filter(([, fill]) => { const [r, g] = fill.match(/\d+/g).map(Number); return r > 200 && g < 50; });
    assert.ok(grown.some(([text]) => text.startsWith("main (growth.c:")), `frames: ${fills.map(([t, f]) => `${t} ${f}`)}`);
    assert.deepEqual(errors, [], "console errors");
    await page.close();
  });
  // That report's own page: its flame graph by peak says the sites left out are not in it.
  await check("a flame graph by peak says what the report left out", async () => {
    const { page, errors } = await open(fixedHtml);
    await page.select("#measure", "peak");
    assert.match(await page.$eval("#flame-note", (e) => e.textContent), /^The \d+ smaller bounded sites the report left out \(each at most 4\.0 KiB at peak\) are not in it: the widths are the peaks of the 1 listed site\.$/);
    await page.select("#measure", "leaked");
    assert.equal(await page.$eval("#flame-note", (e) => e.textContent), "");
    assert.deepEqual(errors, [], "console errors");
    await page.close();
  });
}

// A diff against a run without an exit scan (tests/programs/address_space_full.c, beside growth.c:
// with no room left for the scan, then with 64 MiB): its leaks were not looked for, and the page
// says "not judged", not 0 B.
if (growthProgram) {
  const full = path.join(path.dirname(growthProgram), "address_space_full");
  const scanned = path.join(outDir, "scanned.json"), unscanned = path.join(outDir, "unscanned.json");
  execFileSync(tleak, ["run", "-o", scanned, "--", full, "64"], { stdio: ["ignore", "ignore", "ignore"] });
  execFileSync(tleak, ["run", "-o", unscanned, "--", full, "0"], { stdio: ["ignore", "ignore", "ignore"] });
  const html = path.join(outDir, "unscanned-diff.html");
  execFileSync(tleak, ["diff", scanned, unscanned, "--html", html], { stdio: ["ignore", "ignore", "ignore"] });
  await check("diff page of a run without an exit scan", async () => {
    const { page, errors } = await open(html);
    const body = await page.$eval("#diff-page", (e) => e.textContent);
    assert.ok(body.includes("leaked1000 B → not judged"), "no 'not judged' for B's leaks");
    const cells = await page.$eval("#diff-sites tbody tr", (r) => [...r.querySelectorAll("td")].map((t) => t.textContent));
    assert.equal(cells[4], "1000 B → not judged");
    assert.deepEqual(errors, [], "console errors");
    await page.close();
  });
}

// A program a wrapper script runs, recorded with --record: the page says which process it is of, and
// that the exit status is the command's.
if (growthProgram) {
  const wrapper = path.join(outDir, "wrapper.sh"), json = path.join(outDir, "recorded.json"), html = path.join(outDir, "recorded.html");
  writeFileSync(wrapper, `#!/bin/sh\n${growthProgram} leaky\nexit 0\n`, { mode: 0o755 });
  execFileSync(tleak, ["run", "--record", "growth", "-o", json, "--html", html, "--", wrapper], { stdio: ["ignore", "ignore", "ignore"] });
  const report = JSON.parse(readFileSync(json, "utf8"));
  await check("page of a program recorded with --record", async () => {
    const { page, errors } = await open(html);
    assert.equal(await page.$eval("#title", (e) => e.textContent), wrapper);
    const totals = await page.$eval("#totals", (e) => e.textContent);
    assert.ok(totals.includes(`recordedgrowth (pid ${report.run.program.pid}), the first of the command's processes to run it`), totals);
    assert.ok(totals.includes("the command's exitstatus 0"), totals);
    assert.deepEqual(errors, [], "console errors");
    await page.close();
  });
}

// A program killed by a signal (tests/programs/outside_signal.c pipe, beside growth.c): the page
// says which, as the summary does.
if (growthProgram) {
  const json = path.join(outDir, "killed.json"), html = path.join(outDir, "killed.html");
  const killed = path.join(path.dirname(growthProgram), "outside_signal");
  const run = spawnSync(tleak, ["run", "-o", json, "--html", html, "--", killed, "pipe"], { stdio: ["ignore", "ignore", "ignore"] });
  assert.equal(run.status, 3);
  await check("page of a program killed by a signal", async () => {
    const { page, errors } = await open(html);
    const totals = await page.$eval("#totals", (e) => e.textContent);
    assert.ok(totals.includes("exitkilled by SIGPIPE"), totals);
    assert.deepEqual(errors, [], "console errors");
    await page.close();
  });
}

// A worker recorded with --record-fork (tests/programs/forked_workers.c, beside growth.c): the page
// says the process is a forked copy, and that the exit status is the command's.
if (growthProgram) {
  const json = path.join(outDir, "forked.json"), html = path.join(outDir, "forked.html");
  const workers = path.join(path.dirname(growthProgram), "forked_workers");
  execFileSync(tleak, ["run", "--record-fork", "-o", json, "--html", html, "--", workers], { stdio: ["ignore", "ignore", "ignore"] });
  const report = JSON.parse(readFileSync(json, "utf8"));
  await check("page of a forked copy recorded with --record-fork", async () => {
    const { page, errors } = await open(html);
    const totals = await page.$eval("#totals", (e) => e.textContent);
    assert.ok(totals.includes(`recordeda forked copy (pid ${report.run.program.pid}), from its first allocation on`), totals);
    assert.ok(totals.includes("the command's exitstatus 0"), totals);
    assert.deepEqual(errors, [], "console errors");
    await page.close();
  });
}

// A program without marks (tests/programs/timed_growth.c, beside growth.c): sampled by time, its page
// says its growth per sampling period and its series over samples, never per iteration.
if (growthProgram) {
  const json = path.join(outDir, "timed.json"), html = path.join(outDir, "timed.html");
  const timed = path.join(path.dirname(growthProgram), "timed_growth");
  execFileSync(tleak, ["run", "--sample-every", "50ms", "-o", json, "--html", html, "--", timed], { stdio: ["ignore", "ignore", "ignore"] });
  const report = JSON.parse(readFileSync(json, "utf8"));
  await check("time-sampled program page", async () => {
    const { page, errors, requests } = await open(html);
    assert.equal(report.run.program.clock, "time");
    assert.equal(await page.$eval("#sentence", (e) => e.textContent), report.summary.sentence);
    assert.match(report.summary.sentence, / per 50 ms at /);
    const headers = await page.$$eval("#sites-head th", (ths) => ths.map((t) => t.textContent));
    assert.ok(headers.some((h) => h.startsWith("growth / 50 ms")), `headers: ${headers}`);
    const cells = await page.$$eval("#sites-body td", (tds) => tds.map((t) => t.textContent));
    assert.ok(cells.some((c) => / per 50 ms$/.test(c)), `cells: ${cells.slice(0, 20)}`);
    const body = await page.$eval("body", (b) => b.innerText);
    assert.ok(!/per iteration/.test(body), "the page says 'per iteration' of a program that has none");
    assert.deepEqual(errors, [], "console errors");
    assert.deepEqual(requests, [], "requests beyond the page");
    await page.close();
  });
  // The diff page of two such reports: its growth per 50 ms too.
  const diffHtml = path.join(outDir, "timed-diff.html");
  execFileSync(tleak, ["diff", json, json, "--html", diffHtml], { stdio: ["ignore", "ignore", "ignore"] });
  await check("time-sampled diff page", async () => {
    const { page, errors } = await open(diffHtml);
    const headers = await page.$$eval("#diff-sites th", (ths) => ths.map((t) => t.textContent));
    assert.ok(headers.includes("growth / 50 ms"), `headers: ${headers}`);
    const body = await page.$eval("body", (b) => b.innerText);
    assert.ok(/ per 50 ms → /.test(body), "no growth per 50 ms on the diff page");
    assert.ok(!/iteration/.test(body), "the diff page says 'iteration' of a program that has none");
    assert.deepEqual(errors, [], "console errors");
    await page.close();
  });
}

// A stripped program's page (Debian's ls): its frames with no symbol are named by their place in
// their module in the flame graph, each apart, as in the text summary; never one merged "??".
{
  const json = path.join(outDir, "stripped.json"), html = path.join(outDir, "stripped.html");
  execFileSync(tleak, ["run", "-o", json, "--html", html, "--", "/bin/ls", "/"], { stdio: ["ignore", "ignore", "ignore"] });
  await check("stripped program's flame graph", async () => {
    const { page, errors } = await open(html);
    const names = await page.$$eval("#flame svg g.frame", (gs) => gs.map((g) => g.querySelector("title")?.textContent || g.textContent));
    assert.ok(names.some((n) => /^ls\+0x[0-9a-f]+/.test(n)), `frames: ${names.slice(0, 20)}`);
    assert.ok(!names.some((n) => n.startsWith("??")), `frames: ${names.filter((n) => n.startsWith("??")).slice(0, 5)}`);
    assert.deepEqual(errors, [], "console errors");
    await page.close();
  });
}

// The diff page: a growth regression (graph-ops-in-loop, fixed then leaky).
{
  const before = page_for("graph-ops-in-loop", "fixed"), after = page_for("graph-ops-in-loop", "leaky");
  const html = path.join(outDir, "diff.html");
  const run = spawnSync(tleak, ["diff", path.join(outDir, "graph-ops-in-loop-fixed.json"), path.join(outDir, "graph-ops-in-loop-leaky.json"),
    "--format", "json", "--html", html], { encoding: "utf8" });
  const diff = JSON.parse(run.stdout);
  await check("diff page", async () => {
    assert.ok(before.report && after.report);
    const { page, errors, requests } = await open(html);
    const sentence = await page.$eval("#diff-sentence", (e) => e.textContent);
    assert.ok(sentence.startsWith(`${diff.counts.regressions} regression(s)`), sentence);
    assert.equal(await page.$$eval("#diff-sites tbody tr", (rows) => rows.length), diff.sites.length);
    assert.equal(await page.$eval("#diff-sites tbody tr", (r) => r.classList.contains("regressed")), true);
    await assertFitsWidth(page);
    assert.equal(await page.$eval("#diff-sites tbody tr td:nth-child(3)", (td) => td.textContent), "bounded → growth");
    const inked = await page.$eval("#diff-timeline canvas", (c) => {
      const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 3; i < d.length; i += 4) if (d[i] !== 0) ++n;
      return n;
    });
    assert.ok(inked > 500, `diff timeline has ${inked} drawn pixels`);
    // The growing constant's frame is red: it grew from A (where it was listed, bounded: no growth)
    // to B, all of its growth new, but the site is no new one (not d3-flame-graph's orange).
    assert.equal(await page.$eval("#diff-measure", (s) => s.value), "growth");
    const fills = await page.$$eval("#diff-flame svg g.frame", (gs) => gs.map((g) => [g.textContent, g.querySelector("rect").getAttribute("fill")]));
    const grown = fills.find(([text]) => text.startsWith("tleak::runtime::constant"));
    assert.ok(grown, `frames: ${fills.map(([t]) => t)}`);
    assert.equal(grown[1], "rgb(220,0,0)", `the grown frame is ${grown[1]}`);
    await page.screenshot({ path: path.join(outDir, "diff.png"), fullPage: true });
    assert.deepEqual(errors, [], "console errors");
    assert.deepEqual(requests, [], "requests beyond the page");
    await page.close();
  });
}

await check("a click zoomed the flame graph of some page", async () => assert.ok(zooms.length >= 2, `zoomed: ${zooms}`));
await browser.close();
console.log(failures === 0 ? "all pages passed" : `${failures} page(s) failed`);
process.exit(failures === 0 ? 0 : 1);
