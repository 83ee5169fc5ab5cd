// The page's data back in the report's shape: web/src/page_data.cc writes a report in columns
// (every string and frame once), and this rebuilds the sites, their frames and the curves it kept.

// Objects from columns. Every object gets its nested objects first, then one column at a time
// fills every object, so all objects take the same shape in the same order (fast in V8).
function rows(columns, count, strings) {
  const paths = Object.keys(columns).map((path) => path.split("."));
  const prefixes = [...new Set(paths.filter((p) => p.length > 1).map((p) => p.slice(0, -1).join(".")))];
  const out = new Array(count);
  for (let i = 0; i < count; ++i) {
    const row = {};
    for (const prefix of prefixes) {
      let target = row;
      for (const k of prefix.split(".")) target = target[k] || (target[k] = {});
    }
    out[i] = row;
  }
  for (const keys of paths) {
    const column = columns[keys.join(".")];
    const last = keys[keys.length - 1];
    const parents = keys.slice(0, -1);
    const targets = parents.length === 0 ? out : out.map((row) => parents.reduce((t, k) => t[k], row));
    if ("c" in column) {
      for (let i = 0; i < count; ++i) targets[i][last] = column.c;
    } else if (column.s) {
      const values = column.s;
      for (let i = 0; i < count; ++i) targets[i][last] = values[i] < 0 ? null : strings[values[i]];
    } else {
      const values = column.v;
      for (let i = 0; i < count; ++i) targets[i][last] = values[i];
    }
  }
  return out;
}

// The report, with `curves_left_out` (how many sites came without their curve) and `via` (by site
// id, what tells a site from those that read alike: the text's via lines).
export function reportFromPageData(data) {
  const frames = rows(data.frames, data.frame_count, data.strings);
  const sites = rows(data.sites, data.site_count, data.strings);
  sites.forEach((site, i) => { site.frames = data.site_frames[i].map((f) => frames[f]); });
  data.curve_sites.forEach((site, k) => { sites[site].live_bytes_at_samples = data.curves[k]; });
  return { ...data.report, sites, curves_left_out: data.site_count - data.curve_sites.length, via: data.site_via || {} };
}
