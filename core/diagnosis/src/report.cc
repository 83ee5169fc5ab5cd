#include "tleak/diagnosis/report.h"

#include <cstdio>

#include "tleak/agent/python_files.h"
#include "tleak/allocator_error.h"
#include "tleak/diagnosis/counted.h"
#include "tleak/diagnosis/step_words.h"

namespace tleak::diagnosis {

bool is_allocation_plumbing(const Frame& frame) {
  // By the qualified name: a function of the program's own that returns a std:: type is
  // demangled with that type in front ("std::vector<int> load<int>(int)").
  const std::string_view name = qualified_name(frame.function);
  for (const std::string_view prefix : {"std::", "tleak::Allocator::", "tleak::detail::", "operator new"}) {
    if (name.starts_with(prefix)) return true;
  }
  // The C and C++ runtimes' own allocating functions (strdup, fopen, __cxa_allocate_exception...),
  // and tleak's agent, whose operator new may forward a program's (its inlined helpers are no
  // "operator new").
  for (const char* module : {"libc.so", "libstdc++.so", "ld-linux", "libtleak_preload.so"}) {
    if (frame.module.rfind(module, 0) == 0) return true;
  }
  // Library code inlined into the program's, told by its line being in the system's headers (GCC's
  // debug info may name an inlined function of the C++ library with no scope: "allocate"). The
  // function it was inlined into, at the line that called it, is what asked: a header-only
  // library's function ("basic_json::operator[]" of nlohmann's json.hpp) names no site.
  return frame.kind == FrameKind::kInlined &&
         (frame.file.starts_with("/usr/include/") || frame.file.find("/include/c++/") != std::string::npos);
}

namespace {

// The frame of the user's code among Python frames, or npos when there are none. Without one (an
// import deeper than the stack kept, a library's own thread), the innermost frame of a real file:
// "torch/__init__.py:218" says which import it was, where the import machinery's own frames
// ("<frozen importlib._bootstrap>") read the same for every import.
std::size_t user_python_frame(const std::vector<Frame>& frames, PythonUsersCode mine) {
  std::size_t first_python = std::string::npos, first_file = std::string::npos;
  for (std::size_t i = 0; i < frames.size(); ++i) {
    if (frames[i].kind != FrameKind::kPython) continue;
    if (first_python == std::string::npos) first_python = i;
    if (first_file == std::string::npos && !frames[i].file.empty() && frames[i].file[0] != '<') first_file = i;
    if (agent::python_file_is_users(frames[i].file, mine.focus, mine.main_code)) return i;
  }
  return first_file != std::string::npos ? first_file : first_python;
}

}  // namespace

std::string_view unread_module_reason(const Frame& frame) {
  const std::string_view f = frame.function;
  if (frame.kind != FrameKind::kNative || !f.starts_with("?? (") || !f.ends_with(")")) return {};
  return f.substr(4, f.size() - 5);
}

bool frame_has_name(const Frame& frame) {
  // The symbolizer's reason is one for every address of the module, which would make its frames one.
  return !frame.function.empty() && frame.function != "??" && unread_module_reason(frame).empty();
}

std::string frame_short_name(const Frame& frame) {
  // A Python function's name is no C++ name to shorten ("Model.<locals>.step"), and tleak's own
  // Python frames say what they stand for in words ("(10 Python frames left out)").
  if (frame.kind == FrameKind::kPython) return frame.function;
  if (frame_has_name(frame) || frame.module.empty()) return short_function(frame.function);
  char offset[32];
  std::snprintf(offset, sizeof offset, "+0x%llx", static_cast<unsigned long long>(frame.module_offset));
  return frame.module + offset;
}

namespace {

bool is_runtime(const Frame& frame) { return frame.function.rfind("tleak::runtime::", 0) == 0; }

}  // namespace

std::string_view file_name(std::string_view path) {
  const auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

PythonUsersCode python_users_code(const RunInfo& run) {
  if (!run.program) return {};
  // Views of the report's own strings (value_or would make temporaries).
  const auto view = [](const std::optional<std::string>& text) { return text ? std::string_view(*text) : std::string_view{}; };
  return {view(run.program->focus), view(run.program->python_main_code)};
}

std::size_t user_frame_index(const std::vector<Frame>& frames, PythonUsersCode mine) {
  if (const std::size_t python = user_python_frame(frames, mine); python != std::string::npos) return python;
  for (std::size_t i = 0; i < frames.size(); ++i) {
    if (!is_allocation_plumbing(frames[i]) && !is_runtime(frames[i])) return i;
  }
  return 0;
}

std::string site_label(const std::vector<Frame>& frames, PythonUsersCode mine) {
  if (frames.empty()) return "(no stack recorded)";
  // The first frame outside allocation plumbing and tleak's runtime is the code that asked; the
  // runtime function it called (if any) says what it asked for.
  const std::size_t user = user_frame_index(frames, mine);
  const Frame& chosen = frames[user];
  if (chosen.kind == FrameKind::kPython) {
    // A package's __init__.py is named with its package ("torch/__init__.py"): alone it names none.
    const std::string_view path = chosen.file, file = file_name(path);
    std::string shown(file);
    if ((file == "__init__.py" || file == "__main__.py") && path.size() > file.size() + 1) {
      shown = std::string(file_name(path.substr(0, path.size() - file.size() - 1))) + "/" + shown;
    }
    return shown + ":" + std::to_string(chosen.line) + " in " + chosen.function;
  }
  std::string label = frame_short_name(chosen);
  if (user > 0 && is_runtime(frames[user - 1])) label = short_function(frames[user - 1].function) + " in " + label;
  if (!chosen.file.empty()) {
    label += " (" + std::string(file_name(chosen.file)) + ":" + std::to_string(chosen.line) + ")";
  } else if (!chosen.module.empty() && frame_has_name(chosen)) {
    label += " (" + chosen.module + ")";
  } else if (!chosen.module.empty()) {
    // A function without a symbol (static, in a stripped module: Debian's python3 has only its
    // exported ones) is named by its place; the nearest caller in the same module that has a
    // name says which code that place belongs to ("python3.11+0x22d1da (called from PyList_New)").
    for (std::size_t i = user + 1; i < frames.size() && frames[i].kind == FrameKind::kNative; ++i) {
      if (frames[i].module != chosen.module) break;
      if (frame_has_name(frames[i])) {
        label += " (called from " + short_function(frames[i].function) + ")";
        break;
      }
    }
  }
  return label;
}

bool leaks_unjudged(const Report& report) {
  return report.run.program && !report.run.program->exit_scan && report.totals.unjudged_at_exit_bytes > 0;
}

std::string summary_sentence(const SiteReport& site, const Report& report) {
  char text[512];
  const StepWords words = step_words(report.run);
  if (site.verdict == "leak") {
    std::snprintf(text, sizeof text, "leak: %s in %s never freed, allocated at %s",
                  format_bytes(static_cast<double>(report.totals.leaked_bytes)).c_str(),
                  counted(static_cast<std::uint64_t>(report.totals.leaked_blocks), "block", "blocks").c_str(),
                  site.label.c_str());
  } else if (site.verdict == "growth") {
    // Several growing sites: the sentence gives their sum, so it never understates the growth.
    double total = 0;
    for (const SiteReport& s : report.sites) {
      if (s.verdict == "growth") total += s.growth.slope_bytes_per_iteration;
    }
    if (report.summary.growth_sites > 1) {
      std::snprintf(text, sizeof text, "growth: +%s per %s in %llu sites, the most (+%s) at %s",
                    format_bytes(total).c_str(), words.per.c_str(), static_cast<unsigned long long>(report.summary.growth_sites),
                    format_bytes(site.growth.slope_bytes_per_iteration).c_str(), site.label.c_str());
    } else {
      std::snprintf(text, sizeof text, "growth: +%s per %s at %s", format_bytes(site.growth.slope_bytes_per_iteration).c_str(),
                    words.per.c_str(), site.label.c_str());
    }
  } else if (site.verdict == "retained") {
    std::snprintf(text, sizeof text, "retained: %s held after last use (drag up to %s, %s) at %s",
                  format_bytes(static_cast<double>(site.retained.peak_dead_bytes)).c_str(),
                  counted(site.retained.drag_ops_max, "op", "ops").c_str(),
                  words.count(site.retained.drag_iterations_max).c_str(), site.label.c_str());
  } else {
    const char* leaks = leaks_unjudged(report) ? "leaks not judged (no exit scan)" : "nothing leaked";
    if (!report.total_growth.assessed) {
      std::snprintf(text, sizeof text, "bounded: peak %s live, %s; growth not assessed (%s; at least %llu needed); largest site %s",
                    format_bytes(static_cast<double>(report.totals.peak_live_bytes)).c_str(), leaks,
                    words.count(report.run.iterations).c_str(),
                    static_cast<unsigned long long>(iterations_needed_for_growth(report.thresholds)), site.label.c_str());
    } else {
      std::snprintf(text, sizeof text, "bounded: peak %s live, %s; largest site %s",
                    format_bytes(static_cast<double>(report.totals.peak_live_bytes)).c_str(), leaks, site.label.c_str());
    }
  }
  return text;
}

void judge_agreement(MemcheckFigures& m, bool pool_annotated) {
  const std::int64_t memcheck_lost = m.definitely_lost_bytes >= 0 ? m.definitely_lost_bytes + m.indirectly_lost_bytes : m.lost_bytes;
  const std::string device = m.tleak_device_leaked_bytes > 0
                                 ? "; tleak also found " + format_bytes(static_cast<double>(m.tleak_device_leaked_bytes)) +
                                       " leaked in device memory, which memcheck cannot see"
                                 : "";
  m.agrees = memcheck_lost == m.tleak_host_leaked_bytes;
  std::string why;
  if (!m.agrees && !pool_annotated && memcheck_lost < m.tleak_host_leaked_bytes) {
    why = " (the pool ran without Valgrind annotations, so its blocks are invisible to memcheck)";
  }
  m.agreement = std::string(m.agrees ? "agree" : "disagree") + ": memcheck finds " +
                format_bytes(static_cast<double>(memcheck_lost)) + " lost, tleak " +
                format_bytes(static_cast<double>(m.tleak_host_leaked_bytes)) + " leaked in host memory" + why + device;
}

}  // namespace tleak::diagnosis
