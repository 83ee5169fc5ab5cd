// Bundles the page (app.js with uPlot and d3-flame-graph, their CSS and ours) into one HTML
// template with everything inline; the tleak build embeds it. Usage: node build.mjs OUTPUT.html
import { build } from "esbuild";
import { readFileSync, writeFileSync, renameSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";

const here = path.dirname(fileURLToPath(import.meta.url));
const output = process.argv[2];
if (!output) throw new Error("usage: node build.mjs OUTPUT.html");
const read = (p) => readFileSync(path.join(here, p), "utf8");

const bundle = await build({
  entryPoints: [path.join(here, "src/app.js")],
  bundle: true, minify: true, write: false, format: "iife", target: "es2020", legalComments: "inline",
  loader: { ".css": "empty" },  // the libraries' CSS is inlined below, with ours
});
const js = bundle.outputFiles[0].text;
const css = [read("node_modules/uplot/dist/uPlot.min.css"), read("node_modules/d3-flame-graph/dist/d3-flamegraph.css"), read("src/page.css")].join("\n");
// Neither may close its element early.
for (const [name, text, closer] of [["script", js, "</script"], ["style", css, "</style"]]) {
  if (text.toLowerCase().includes(closer)) throw new Error(`bundled ${name} contains ${closer}`);
}
const page = read("src/page.html").replace("/*TLEAK_CSS*/", () => css).replace("/*TLEAK_JS*/", () => js);
writeFileSync(`${output}.tmp`, page);
renameSync(`${output}.tmp`, output);
