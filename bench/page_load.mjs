// Opens a tleak page in headless Chromium (Debian's) and prints its size, first paint and the time
// until it is interactive (every chart, table and handler in place: body[data-ready]), with the
// page's own marks for each part, the median of RUNS loads.
// Usage: node bench/page_load.mjs PAGE.html [RUNS]   (bench/page_benchmark makes the page)
import { statSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const puppeteer = createRequire(path.join(here, "../web/package.json"))("puppeteer-core");
const [file, runsArg] = process.argv.slice(2);
if (!file) throw new Error("usage: node bench/page_load.mjs PAGE.html [RUNS]");
const runs = Number(runsArg || 5);
const browser = await puppeteer.launch({ executablePath: "/usr/bin/chromium", headless: true, args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
const results = [];
for (let r = 0; r < runs; ++r) {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 900 });
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  const start = Date.now();
  await page.goto(pathToFileURL(path.resolve(file)).href, { waitUntil: "load", timeout: 120000 });
  await page.waitForSelector("body[data-ready=true]", { timeout: 120000 });
  const interactive = Date.now() - start;
  const marks = await page.evaluate(() => Object.fromEntries([...performance.getEntriesByType("paint"), ...performance.getEntriesByType("mark")].map((e) => [e.name, Math.round(e.startTime)])));
  if (errors.length) throw new Error(`page errors: ${errors}`);
  results.push({ interactive, ...marks });
  await page.close();
}
await browser.close();
const median = (key) => results.map((r) => r[key]).sort((a, b) => a - b)[Math.floor(results.length / 2)];
const parts = [["tleak-start", "script starts"], ["tleak-parsed", "data parsed"], ["tleak-hydrated", "sites rebuilt"],
  ["tleak-timeline", "timeline"], ["tleak-table", "table"], ["tleak-flame", "flame graph"]]
  .filter(([key]) => results[0][key] !== undefined).map(([key, name]) => `${name} ${median(key)}`);
console.log(`page ${(statSync(file).size / 2 ** 20).toFixed(1)} MiB; median of ${runs} loads: first paint ${median("first-paint")} ms, ` +
  `interactive ${median("interactive")} ms (${parts.join(", ")} ms)`);
