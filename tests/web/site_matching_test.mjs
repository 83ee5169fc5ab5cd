// The diff page's matching of sites (web/src/site_matching.js), without a browser: the same sites
// `tleak diff` pairs (tests/diagnosis/diff_matching_test.cc), so the differential flame graph shows
// no change where the diff sees none.
//
// Usage: node site_matching_test.mjs
import assert from "node:assert/strict";
import { matchingKeys } from "../../web/src/site_matching.js";

const frame = (fn, file, line, kind = "native", module = "prog") => ({ function: fn, module, file, line, kind });
const newOp = frame("operator new(unsigned long)", "", 0, "native", "libstdc++.so.6");
const main = frame("main", "main.cc", 30);
const site = (...frames) => ({ frames });

// A report of a tleak that named no inlined frames (the physical frame at the inlined code's own
// line) against today's: each site is paired with its own.
const oldRows = site(newOp, frame("grow_rows(int)", "new_allocator.h", 137), main);
const newRows = site(newOp, frame("allocate", "new_allocator.h", 137, "inlined"),
  frame("emplace_back<int>", "vector.tcc", 117, "inlined"), frame("grow_rows(int)", "rows.cc", 12), main);
const oldLoad = site(newOp, frame("load()", "basic_string.h", 225), main);
const newLoad = site(newOp, frame("_M_create", "basic_string.tcc", 140, "inlined"), frame("load()", "load.cc", 8), main);
const keys = matchingKeys({ sites: [oldRows, oldLoad] }, { sites: [newLoad, newRows] });
assert.equal(keys.get(oldRows), keys.get(newRows));
assert.equal(keys.get(oldLoad), keys.get(newLoad));
assert.notEqual(keys.get(oldRows), keys.get(oldLoad));

// Two sites in one function, apart only by what was inlined: not paired at random.
const newOther = site(newOp, frame("_M_create", "basic_string.tcc", 140, "inlined"), frame("grow_rows(int)", "rows.cc", 15), main);
const oldOther = site(newOp, frame("grow_rows(int)", "basic_string.tcc", 140), main);
const two = matchingKeys({ sites: [oldRows, oldOther] }, { sites: [newRows, newOther] });
const bKeys = new Set([two.get(newRows), two.get(newOther)]);
assert.ok(!bKeys.has(two.get(oldRows)) && !bKeys.has(two.get(oldOther)));

// Lines that moved, same frames otherwise: paired by the looser key first.
const moved = matchingKeys({ sites: [site(frame("f", "x.cc", 10))] }, { sites: [site(frame("f", "x.cc", 14))] });
assert.equal(moved.size, 2);
assert.equal(new Set(moved.values()).size, 1);
// Two sites of A with equal frames (tleak diff sums them into one) and one of B whose line moved:
// paired, as tleak diff pairs them (DiffMatching.MergedSitesTakeTheWorstVerdict's merging).
const twinA = site(frame("f", "x.cc", 10)), twinA2 = site(frame("f", "x.cc", 10)), movedB = site(frame("f", "x.cc", 12));
const twins = matchingKeys({ sites: [twinA, twinA2] }, { sites: [movedB] });
assert.equal(twins.get(twinA), twins.get(movedB));
assert.equal(twins.get(twinA2), twins.get(movedB));
// Two calls on one Python line, told apart by their columns: each paired with its own, not both
// with both. A report without columns had them as one site of the line: it takes both.
const call = (column, end_column) => site({ ...frame("Net.forward", "/srv/serve.py", 9, "python", "serve.py"), column, end_column });
const [outerA, innerA, outerB, innerB] = [call(16, 50), call(35, 46), call(16, 50), call(35, 46)];
const calls = matchingKeys({ sites: [outerA, innerA] }, { sites: [innerB, outerB] });
assert.equal(calls.get(outerA), calls.get(outerB));
assert.equal(calls.get(innerA), calls.get(innerB));
assert.notEqual(calls.get(outerA), calls.get(innerA));
const oldLine = site(frame("Net.forward", "/srv/serve.py", 9, "python", "serve.py"));
const before = matchingKeys({ sites: [oldLine] }, { sites: [innerB, outerB] });
assert.equal(before.get(innerB), before.get(oldLine));
assert.equal(before.get(outerB), before.get(oldLine));
// Columns that moved on both sides (the line edited): not guessed at.
const edited = matchingKeys({ sites: [outerA, innerA] }, { sites: [call(18, 52), call(37, 48)] });
assert.ok(![...edited.values()].some((k) => k.startsWith("line\n")));
assert.equal(new Set(edited.values()).size, 4);
console.log("site_matching: all passed");
