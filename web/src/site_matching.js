// Which sites of two reports are one site, as `tleak diff` decides (core/diagnosis/src/diff.cc):
// by every frame's function, module, file name, line and columns (where given); then, for the
// sites left unmatched, by a looser key when a site is the only one of its kind left on each side.

// Function, module, file name and line of every frame.
function lineKey(site) {
  return site.frames.map((f) => `${f.function || ""}|${f.module || ""}|${(f.file || "").split("/").pop()}:${f.line ?? 0}`).join("\n");
}

const hasColumns = (site) => site.frames.some((f) => f.column > 0);

// The same and the columns where given: two calls on one line are two sites.
export function siteKey(site) {
  if (!hasColumns(site)) return lineKey(site);
  return site.frames
    .map((f) => `${lineKey({ frames: [f] })}${f.column > 0 ? `:${f.column}-${f.end_column ?? 0}` : ""}`)
    .join("\n");
}

// Without lines: a site whose code moved between builds.
function looseKey(site) {
  return site.frames.map((f) => `${f.function || ""}|${f.module || ""}`).join("\n");
}

// Without lines or inlined frames: a report of a tleak that named no inlined frames, or a build
// that inlined other calls.
function physicalKey(site) {
  return looseKey({ frames: site.frames.filter((f) => f.kind !== "inlined") });
}

// A key per site that is equal for the sites `tleak diff` would match across the two runs.
export function matchingKeys(a, b) {
  const keys = new Map();
  for (const site of [...a.sites, ...b.sites]) keys.set(site, siteKey(site));
  const strictA = new Set(a.sites.map((s) => keys.get(s))), strictB = new Set(b.sites.map((s) => keys.get(s)));
  let unmatchedA = a.sites.filter((s) => !strictB.has(keys.get(s)));
  let unmatchedB = b.sites.filter((s) => !strictA.has(keys.get(s)));
  for (const [pass, keyOf] of [["line", lineKey], ["moved", looseKey], ["inlined", physicalKey]]) {
    const byKey = (sites) => {
      const groups = new Map();
      for (const s of sites) groups.set(keyOf(s), [...(groups.get(keyOf(s)) || []), s]);
      return groups;
    };
    const groupsA = byKey(unmatchedA), groupsB = byKey(unmatchedB);
    const matched = new Set();
    for (const [key, sitesA] of groupsA) {
      const sitesB = groupsB.get(key);
      // A's sites with equal frames are one site of the diff (`tleak diff` sums them); B's are not,
      // but where A gave no columns, its one site of a line stands for every call B tells apart there.
      if (new Set(sitesA.map((s) => siteKey(s))).size !== 1 || !sitesB) continue;
      if (sitesB.length !== 1 && !(pass === "line" && !hasColumns(sitesA[0]))) continue;
      for (const s of [...sitesA, ...sitesB]) {
        keys.set(s, `${pass}\n${key}`);
        matched.add(s);
      }
    }
    unmatchedA = unmatchedA.filter((s) => !matched.has(s));
    unmatchedB = unmatchedB.filter((s) => !matched.has(s));
  }
  return keys;
}
