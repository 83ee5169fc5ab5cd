// The page's own arithmetic (web/src/report_model.js), without a browser: axis labels, the sites a
// chart draws.
//
// Usage: node report_model_test.mjs
import assert from "node:assert/strict";
import { byteTicks, chartedSites } from "../../web/src/report_model.js";

// Ticks 25,000 bytes apart near 63 MiB: four labels, all different (one decimal wrote 63.1 MiB twice).
const close = byteTicks([66150000, 66175000, 66200000, 66225000]);
assert.deepEqual(close, ["63.09 MiB", "63.11 MiB", "63.13 MiB", "63.16 MiB"]);
assert.equal(new Set(close).size, close.length);
// Far apart: one decimal, one unit for all (the largest's).
assert.deepEqual(byteTicks([0, 20e6, 40e6, 60e6]), ["0.0 MiB", "19.1 MiB", "38.1 MiB", "57.2 MiB"]);
assert.deepEqual(byteTicks([0, 512 * 1024, 1024 * 1024]), ["0.0 MiB", "0.5 MiB", "1.0 MiB"]);
assert.deepEqual(byteTicks([0, 100, 200]), ["0 B", "100 B", "200 B"]);

// The sites found leaking, growing or retaining, in the report's order (worst first), largest peak
// first; the largest only when none is.
const site = (id, verdict, peak) => ({ id, verdict, peak_live_bytes: peak });
const sites = [site(1, "growth", 80), site(2, "growth", 120), site(3, "bounded", 5000), site(4, "bounded", 9000)];
assert.deepEqual(chartedSites(sites, 5).map((s) => s.id), [2, 1]);
assert.deepEqual(chartedSites(sites, 1).map((s) => s.id), [1]);
assert.deepEqual(chartedSites(sites.slice(2), 5).map((s) => s.id), [4, 3]);
console.log("report_model: all passed");
