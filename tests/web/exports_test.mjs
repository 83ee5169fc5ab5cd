// Opens tleak's exports in the real speedscope (the release build its npm package ships, pinned by
// web/package-lock.json) in headless Chromium, the way speedscope's own command line does: a
// script that hands the file to speedscope.loadFileFromBase64, named by #localProfilePath. Each
// file must load as a profile of its name (the speedscope JSON with one profile per measure), with
// no console error; a screenshot of each is saved.
//
// Usage: node exports_test.mjs TLEAK_BINARY WEB_DIR OUTPUT_DIR
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync, existsSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import assert from "node:assert/strict";

const [tleak, webDir, outArg] = process.argv.slice(2);
if (!tleak || !webDir || !outArg) throw new Error("usage: node exports_test.mjs TLEAK_BINARY WEB_DIR OUTPUT_DIR");
const outDir = path.resolve(outArg);
mkdirSync(outDir, { recursive: true });
if (!existsSync("/usr/bin/chromium")) {
  console.log("SKIP: no chromium (scripts/setup installs Debian's)");
  process.exit(77);
}
const puppeteer = createRequire(path.resolve(webDir, "package.json"))("puppeteer-core");
const speedscope = path.resolve(webDir, "node_modules/speedscope/dist/release/index.html");

const browser = await puppeteer.launch({ executablePath: "/usr/bin/chromium", headless: true, args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
let failures = 0;
for (const scenario of ["append-loop", "custom-op-scratch", "jit-warmup-cache", "result-reference-cycle"]) {
  const report = path.join(outDir, `${scenario}.json`);
  execFileSync(tleak, ["run", scenario, "-o", report, "--format", "text"]);
  const title = JSON.parse(readFileSync(report, "utf8")).run;
  for (const [format, file, expectTitle, expectProfile] of [
    ["speedscope", `${scenario}.speedscope.json`, `tleak: ${scenario} ${title.variant} (${title.mode}) - speedscope`, "peak live bytes (1/4)"],
    ["collapsed", `${scenario}.folded`, `${scenario}.folded - speedscope`, `${scenario}.folded`],
  ]) {
    const exported = path.join(outDir, file);
    execFileSync(tleak, ["export", report, "--format", format, "-o", exported]);
    const loader = `${exported}.js`;
    writeFileSync(loader, `speedscope.loadFileFromBase64(${JSON.stringify(file)}, ${JSON.stringify(readFileSync(exported).toString("base64"))})`);
    try {
      const page = await browser.newPage();
      await page.setViewport({ width: 1280, height: 800 });
      const errors = [];
      page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
      page.on("pageerror", (e) => errors.push(String(e)));
      await page.goto(`file://${speedscope}#localProfilePath=${loader}`, { waitUntil: "load" });
      await page.waitForFunction((t) => document.title === t, { timeout: 15000 }, expectTitle);
      const text = await page.evaluate(() => document.body.innerText);
      assert.ok(text.includes(expectProfile), `speedscope shows: ${text.slice(0, 200)}`);
      assert.ok(!/something went wrong|unrecognized format|failed/i.test(text), text.slice(0, 200));
      await page.screenshot({ path: `${exported}.png` });
      assert.deepEqual(errors, [], "console errors");
      await page.close();
      console.log(`PASS ${file} opens in speedscope`);
    } catch (e) {
      ++failures;
      console.log(`FAIL ${file}: ${e.stack || e}`);
    }
  }
}
await browser.close();
process.exit(failures === 0 ? 0 : 1);
