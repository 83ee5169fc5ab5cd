#include "tleak/diagnosis/site_partings.h"

#include <algorithm>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "source_expression.h"

namespace tleak::diagnosis {

std::size_t first_shown_frame(const SiteReport& s, PythonUsersCode mine) {
  const std::size_t user = user_frame_index(s.frames, mine);
  return user > 0 ? user - 1 : 0;
}

namespace {

// A frame as the text shows it: name and place.
bool shown_alike(const Frame& a, const Frame& b) {
  return a.line == b.line && a.file == b.file && frame_short_name(a) == frame_short_name(b);
}

bool shown_alike(const SiteReport& a, const SiteReport& b, PythonUsersCode mine) {
  const std::size_t fa = first_shown_frame(a, mine), fb = first_shown_frame(b, mine);
  // By what is shown, not where: the stacks of numpy's array data and of its shape under one
  // "PyNumber_Multiply" are of different depths below it, and the deeper one, cut at the stack
  // depth kept, may show fewer frames: the frames both show read the same.
  if (a.label != b.label) return false;
  for (std::size_t k = 0; k < kShownFrames; ++k) {
    const bool in_a = fa + k < a.frames.size(), in_b = fb + k < b.frames.size();
    if (!in_a || !in_b) return k > 0;
    if (!shown_alike(a.frames[fa + k], b.frames[fb + k])) return false;
  }
  return true;
}

// Where two sites that read alike part on a line they share: a frame at the same place in both, same
// function and line, at another column (`self.l2(torch.relu(self.l1(x)))`: each layer's allocations
// come from a call on the one line; in C++, `auto a = std::make_shared<Node>(), b = ...`). Null if
// none does.
const Frame* where_columns_part(const SiteReport& s, const SiteReport& other,
                                PythonUsersCode mine) {
  const std::size_t fs = first_shown_frame(s, mine), fo = first_shown_frame(other, mine);
  for (std::size_t k = 0; fs + k < s.frames.size() && fo + k < other.frames.size(); ++k) {
    const Frame& a = s.frames[fs + k];
    const Frame& b = other.frames[fo + k];
    if (!shown_alike(a, b)) return nullptr;
    if (a.column > 0 && b.column > 0 && (a.column != b.column || a.end_column != b.end_column)) {
      return &a;
    }
  }
  return nullptr;
}

// What sets a site apart from another that reads alike: a frame, and whether it is a call on a line
// both share (a frame's columns: its expression is quoted).
struct Parting {
  const Frame* frame = nullptr;
  bool call_on_shared_line = false;
};

// For a site that would read exactly like another listed (same label, same frames shown: a
// PyTorch line whose module call allocates in several places), the function on its allocation path
// that the other's lacks: its innermost named frame, past allocation plumbing, not among the
// other's hidden frames ("t::call", the transpose, beside "addmm::call"). Failing that, the call on
// a shared line that is its own (where_columns_part); then its innermost such frame of the C++
// library; then, where the paths part only in a stripped library (Debian's numpy: an array's data
// and its shape, both under "PyNumber_Multiply"), its innermost such frame by module and offset,
// which debug symbols installed later resolve. No frame if there is none.
// Whether a frame reads like one of the frames a site's text hides (those before its shown ones).
bool among_hidden_frames(const Frame& frame, const SiteReport& other, PythonUsersCode mine) {
  const std::size_t hidden = first_shown_frame(other, mine);
  for (std::size_t m = 0; m < hidden; ++m) {
    if (shown_alike(frame, other.frames[m])) return true;
  }
  return false;
}

Parting where_stacks_part(const SiteReport& s, const SiteReport& other, PythonUsersCode mine) {
  const std::size_t hidden = first_shown_frame(s, mine);
  const Frame* unnamed_part = nullptr;
  const Frame* library_part = nullptr;
  for (std::size_t k = 0; k < hidden; ++k) {
    const Frame& frame = s.frames[k];
    if (among_hidden_frames(frame, other, mine)) continue;
    if (is_allocation_plumbing(frame)) {
      // The C++ library's own path may be all that differs: a map's node and the vector copied
      // into it, both under one "map::emplace" ("_Rb_tree::_M_get_node",
      // "_Vector_base::_M_allocate").
      if (library_part == nullptr && frame_has_name(frame)) library_part = &frame;
      continue;
    }
    if (!frame_has_name(frame)) {
      if (unnamed_part == nullptr && !frame.module.empty()) unnamed_part = &frame;
      continue;
    }
    return {&frame, false};
  }
  if (const Frame* call = where_columns_part(s, other, mine)) return {call, true};
  return {library_part != nullptr ? library_part : unnamed_part, false};
}

// Whether what a via line says of site `s` (its parting from some other site) sets it apart from
// `other` as well: the frame is none of the other's hidden ones, or, a call on a shared line, the
// other's frame at the same place is another call.
bool sets_apart(const Parting& part, const SiteReport& s, const SiteReport& other,
                PythonUsersCode mine) {
  if (!part.call_on_shared_line) return !among_hidden_frames(*part.frame, other, mine);
  const std::size_t k =
      static_cast<std::size_t>(part.frame - s.frames.data()) - first_shown_frame(s, mine);
  const std::size_t at = first_shown_frame(other, mine) + k;
  if (at >= other.frames.size()) return false;
  const Frame& theirs = other.frames[at];
  return shown_alike(*part.frame, theirs) &&
         (theirs.column != part.frame->column || theirs.end_column != part.frame->end_column);
}

// At most this many via lines for a site: each tells it from another of its group that the ones
// before did not (a PyTorch line's sites part in the kernel's path, then in which layer's call).
constexpr std::size_t kMaxPartings = 3;
constexpr std::size_t kMaxComparedSites = 256;

// A via line's text: a frame as the text names it, or a call on a shared line, its expression
// quoted from the file, with its column.
std::string via_text(const Parting& part) {
  const Frame& frame = *part.frame;
  if (part.call_on_shared_line) {
    const std::optional<std::string> expression = source_expression(frame);
    return "via " + (expression ? *expression : frame_short_name(frame)) + "  " +
           std::string(file_name(frame.file)) + ":" + std::to_string(frame.line) + ":" +
           std::to_string(frame.column);
  }
  std::string text = "via " + frame_short_name(frame);
  if (!frame.file.empty())
    text += "  " + std::string(file_name(frame.file)) + ":" + std::to_string(frame.line);
  if (frame.kind == FrameKind::kInlined) text += "  (inlined)";
  return text;
}

}  // namespace

std::vector<std::vector<std::string>> via_lines(const Report& r, std::size_t count) {
  count = std::min(count, r.sites.size());
  std::vector<std::vector<std::string>> lines(count);
  const PythonUsersCode mine = python_users_code(r.run);
  // Sites read alike only under one label: each is compared with its label's others, in order.
  std::unordered_map<std::string_view, std::vector<std::size_t>> by_label;
  for (std::size_t i = 0; i < count; ++i) by_label[r.sites[i].label].push_back(i);
  for (std::size_t i = 0; i < count; ++i) {
    const SiteReport& s = r.sites[i];
    // What sets it apart from the first other one, then from each other one that what it said so
    // far does not set it apart from; among the first kMaxComparedSites of its label only (a page
    // of 100,000 sites may have thousands under one, which no line tells apart for a reader).
    std::vector<Parting> said;
    const std::vector<std::size_t>& group = by_label[s.label];
    for (std::size_t k = 0; k < group.size() && k < kMaxComparedSites; ++k) {
      const std::size_t j = group[k];
      if (said.size() >= kMaxPartings) break;
      if (j == i || !shown_alike(s, r.sites[j], mine)) continue;
      const SiteReport& other = r.sites[j];
      if (std::any_of(said.begin(), said.end(),
                      [&](const Parting& p) { return sets_apart(p, s, other, mine); }))
        continue;
      const Parting part = where_stacks_part(s, other, mine);
      if (part.frame == nullptr) continue;
      lines[i].push_back(via_text(part));
      said.push_back(part);
    }
  }
  return lines;
}

}  // namespace tleak::diagnosis
