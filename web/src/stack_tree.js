// The tree a flame graph draws: sites' stacks from the outermost frame in, each node weighted by
// the sites below it. Built a level at a time: stacks too small to be seen (under 1/5000 of the
// whole, a fraction of a pixel) are merged per parent into one "(N smaller stacks)" node without
// looking at their deeper frames, so a 100,000-site report stays fast.
import { frameName } from "./report_model.js";

export const kVisibleFraction = 1 / 5000;

const names = new WeakMap();
function nameOf(frame) {
  let name = names.get(frame);
  if (name === undefined) names.set(frame, name = frameName(frame));
  return name;
}

// entries: [site, weight]; `extra(node, site, weight)` is called for each site on the node its
// stack ends in (or the merged node that holds it): the diff page adds each site's delta there.
export function stackTree(entries, extra = null) {
  const root = { name: "all", value: 0, children: [] };
  if (extra) root.delta = 0;  // d3-flame-graph sums a node's own delta and its children's
  const items = extra ? entries : entries.filter(([, weight]) => weight > 0);
  for (const [, weight] of items) root.value += Math.max(weight, 0);
  grow(root, items, 0, root.value * kVisibleFraction, extra);
  return root;
}

function grow(node, items, depth, minimum, extra) {
  const groups = new Map();
  for (const item of items) {
    const frames = item[0].frames;
    if (frames.length <= depth) {
      if (extra) extra(node, item[0], item[1]);
      continue;
    }
    const name = nameOf(frames[frames.length - 1 - depth]);
    let group = groups.get(name);
    if (!group) groups.set(name, group = { name, items: [], value: 0 });
    group.items.push(item);
    group.value += Math.max(item[1], 0);
  }
  const small = [];
  for (const group of groups.values()) (group.value >= minimum ? addChild : (g) => small.push(g))(group);
  function addChild(group) {
    const child = { name: group.name, value: group.value, children: [] };
    if (extra) child.delta = 0;
    node.children.push(child);
    grow(child, group.items, depth + 1, minimum, extra);
  }
  if (small.length === 1) {
    addChild(small[0]);  // one is kept as it is: merging would only hide its name
  } else if (small.length > 1) {
    const merged = { name: `(${small.length} smaller stacks)`, value: 0, children: [] };
    if (extra) merged.delta = 0;
    for (const group of small) {
      merged.value += group.value;
      if (extra) for (const [site, weight] of group.items) extra(merged, site, weight);
    }
    node.children.push(merged);
  }
}
