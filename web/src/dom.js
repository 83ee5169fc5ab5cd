// Small DOM helpers the pages share.

// el("tr", {class: "row", onclick: f}, child, "text", ...)
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c instanceof Node ? c : String(c));
  return node;
}

// One "key value" figure per pair.
export function figures(pairs) {
  return pairs.map(([k, v]) => el("div", { class: "figure" }, el("span", { class: "k" }, k), el("span", { class: "v" }, v)));
}

// The same in a wrapping row.
export function figureList(pairs) {
  return el("div", { class: "figures" }, ...figures(pairs));
}
