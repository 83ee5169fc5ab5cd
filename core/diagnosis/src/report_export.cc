#include "tleak/diagnosis/report_export.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <vector>

namespace tleak::diagnosis {
namespace {

constexpr Measure kMeasures[] = {Measure::kPeak, Measure::kLeaked, Measure::kGrowth, Measure::kRetained};

const char* measure_title(Measure measure) {
  switch (measure) {
    case Measure::kPeak: return "peak live bytes";
    case Measure::kLeaked: return "leaked bytes";
    case Measure::kGrowth: return "growth, bytes per iteration";
    case Measure::kRetained: return "peak dead-but-held bytes";
  }
  return "";
}

// Collapsed stacks separate frames with ';' and end with " weight": neither may appear inside one.
std::string collapsed_name(const Frame& frame) {
  std::string name = frame_name(frame);
  for (char& c : name) {
    if (c == ';') c = ':';
    if (c == '\n' || c == '\r') c = ' ';
  }
  return name;
}

std::string run_name(const Report& report) {
  if (report.run.program) {
    std::string command;
    for (const std::string& word : report.run.program->command) command += (command.empty() ? "" : " ") + word;
    return command;
  }
  return report.run.scenario + " " + report.run.variant + " (" + report.run.mode + ")";
}

}  // namespace

const char* to_string(Measure measure) {
  switch (measure) {
    case Measure::kPeak: return "peak";
    case Measure::kLeaked: return "leaked";
    case Measure::kGrowth: return "growth";
    case Measure::kRetained: return "retained";
  }
  return "peak";
}

std::optional<Measure> measure_from_string(std::string_view name) {
  for (const Measure m : kMeasures) {
    if (name == to_string(m)) return m;
  }
  return std::nullopt;
}

std::int64_t site_weight(const SiteReport& site, Measure measure) {
  switch (measure) {
    case Measure::kPeak: return std::max<std::int64_t>(site.peak_live_bytes, 0);
    case Measure::kLeaked: return std::max<std::int64_t>(site.leaked_bytes, 0);
    case Measure::kGrowth:
      if (site.verdict != "growth" || !(site.growth.slope_bytes_per_iteration > 0)) return 0;
      return static_cast<std::int64_t>(std::llround(std::min(site.growth.slope_bytes_per_iteration, 9.0e18)));
    case Measure::kRetained: return std::max<std::int64_t>(site.retained.peak_dead_bytes, 0);
  }
  return 0;
}

std::string frame_name(const Frame& frame) {
  // An address no symbol covers (a stripped module) is named by its place in its module, as in
  // the text summary: under one "?? [module]" every such frame of a module would merge into one
  // node of a flame graph.
  const bool unnamed = !frame_has_name(frame);
  if (unnamed && !frame.module.empty()) return frame_short_name(frame);
  const std::string function = unnamed ? "??" : frame.function;
  if (!frame.file.empty() && frame.line > 0) {
    return function + " (" + std::string(file_name(frame.file)) + ":" + std::to_string(frame.line) + ")";
  }
  if (!frame.module.empty()) return function + " [" + frame.module + "]";
  return function;
}

std::string collapsed_stacks(const Report& report, Measure measure) {
  std::string out;
  for (const SiteReport& site : report.sites) {
    const std::int64_t weight = site_weight(site, measure);
    if (weight <= 0) continue;
    std::string line;
    for (auto frame = site.frames.rbegin(); frame != site.frames.rend(); ++frame) {
      if (!line.empty()) line += ';';
      line += collapsed_name(*frame);
    }
    if (line.empty()) line = "[no stack]";
    out += line + " " + std::to_string(weight) + "\n";
  }
  return out;
}

nlohmann::json speedscope_profile(const Report& report) {
  // Frames shared by every profile, one entry per distinct (name, file, line).
  nlohmann::json frames = nlohmann::json::array();
  std::map<std::string, std::size_t> index;
  const auto frame_index = [&](const Frame& frame) {
    const std::string name = frame_name(frame);
    const std::string key = name + '\0' + frame.file + '\0' + std::to_string(frame.line);
    const auto [it, fresh] = index.try_emplace(key, frames.size());
    if (fresh) {
      nlohmann::json f = {{"name", name}};
      if (!frame.file.empty()) f["file"] = frame.file;
      if (frame.line > 0) f["line"] = frame.line;
      frames.push_back(std::move(f));
    }
    return it->second;
  };
  nlohmann::json profiles = nlohmann::json::array();
  for (const Measure measure : kMeasures) {
    nlohmann::json samples = nlohmann::json::array(), weights = nlohmann::json::array();
    std::int64_t total = 0;
    for (const SiteReport& site : report.sites) {
      const std::int64_t weight = site_weight(site, measure);
      if (weight <= 0) continue;
      nlohmann::json stack = nlohmann::json::array();
      for (auto frame = site.frames.rbegin(); frame != site.frames.rend(); ++frame) stack.push_back(frame_index(*frame));
      samples.push_back(std::move(stack));
      weights.push_back(weight);
      total += weight;
    }
    profiles.push_back({{"type", "sampled"},
                        {"name", measure_title(measure)},
                        {"unit", "bytes"},
                        {"startValue", 0},
                        {"endValue", total},
                        {"samples", std::move(samples)},
                        {"weights", std::move(weights)}});
  }
  return {{"$schema", "https://www.speedscope.app/file-format-schema.json"},
          {"shared", {{"frames", std::move(frames)}}},
          {"profiles", std::move(profiles)},
          {"name", "tleak: " + run_name(report)},
          {"activeProfileIndex", 0},
          {"exporter", "tleak " + report.run.tleak_version}};
}

nlohmann::json chrome_trace(const Report& report, std::size_t top_sites) {
  // The axis is time: a program sampled by time keeps its seconds; iterations are one millisecond
  // each (the trace format has no other unit).
  const bool by_time = report.run.program && report.run.program->clock == "time";
  const double step_us = by_time ? report.run.program->sample_seconds * 1e6 : 1000.0;
  const auto ts = [&](std::uint64_t iteration) { return static_cast<double>(iteration) * step_us; };

  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"tid", 0},
                    {"args", {{"name", "tleak: " + run_name(report)}}}});
  const auto& allocators = report.totals.allocators;
  const auto allocator_name = [&](std::size_t i) {
    return i < allocators.size() ? allocators[i].name : "allocator " + std::to_string(i);
  };

  // The sites with their own track: the largest by peak.
  std::vector<std::size_t> top(report.sites.size());
  std::iota(top.begin(), top.end(), std::size_t{0});
  std::stable_sort(top.begin(), top.end(), [&](std::size_t a, std::size_t b) {
    return report.sites[a].peak_live_bytes > report.sites[b].peak_live_bytes;
  });
  top.resize(std::min(top.size(), top_sites));

  const auto& samples = report.timeline.samples;
  for (std::size_t k = 0; k < samples.size(); ++k) {
    const TimelineSample& s = samples[k];
    nlohmann::json live = nlohmann::json::object(), reserved = nlohmann::json::object(), sites = nlohmann::json::object();
    for (std::size_t i = 0; i < s.allocator_live_bytes.size(); ++i) live[allocator_name(i)] = s.allocator_live_bytes[i];
    if (s.allocator_live_bytes.empty()) live["all"] = s.live_bytes;
    for (std::size_t i = 0; i < s.allocator_reserved_bytes.size(); ++i) {
      reserved[allocator_name(i)] = s.allocator_reserved_bytes[i];
    }
    for (const std::size_t i : top) {
      const SiteReport& site = report.sites[i];
      // An empty series means the site read its final value at every sample.
      const std::int64_t value = k < site.live_bytes_at_samples.size() ? site.live_bytes_at_samples[k] : site.final_live_bytes;
      std::string track = "#";
      track.append(std::to_string(site.id)).append(" ").append(site.label);
      sites[track] = value;
    }
    events.push_back({{"name", "live bytes"}, {"ph", "C"}, {"ts", ts(s.iteration)}, {"pid", 1}, {"tid", 0}, {"args", live}});
    if (!reserved.empty()) {
      events.push_back({{"name", "reserved bytes"}, {"ph", "C"}, {"ts", ts(s.iteration)}, {"pid", 1}, {"tid", 0}, {"args", reserved}});
    }
    if (!sites.empty()) {
      events.push_back({{"name", "top sites, live bytes"}, {"ph", "C"}, {"ts", ts(s.iteration)}, {"pid", 1}, {"tid", 0}, {"args", sites}});
    }
    std::string mark = by_time ? "sample " : "iteration ";
    mark.append(std::to_string(s.iteration));
    events.push_back({{"name", mark}, {"ph", "i"},
                      {"s", "g"}, {"ts", ts(s.iteration)}, {"pid", 1}, {"tid", 0}});
  }
  // Thinned samples may stop before the last iteration: the tracks end where the report's totals
  // do, at the last iteration mark.
  const std::uint64_t last = samples.empty() ? 0 : samples.back().iteration;
  const std::uint64_t iterations = report.run.iterations;
  if (iterations > last || samples.empty()) {
    nlohmann::json live = nlohmann::json::object();
    for (std::size_t i = 0; i < allocators.size(); ++i) live[allocator_name(i)] = allocators[i].final_live_bytes;
    if (allocators.empty()) live["all"] = report.totals.final_live_bytes;
    events.push_back({{"name", "live bytes"}, {"ph", "C"}, {"ts", ts(iterations)}, {"pid", 1}, {"tid", 0}, {"args", live}});
  }
  if (report.run.program && report.run.program->snapshot) {
    events.push_back({{"name", "snapshot " + *report.run.program->snapshot}, {"ph", "i"}, {"s", "g"},
                      {"ts", ts(std::max(iterations, last))}, {"pid", 1}, {"tid", 0}});
  }
  return {{"traceEvents", std::move(events)},
          {"displayTimeUnit", "ms"},
          {"otherData",
           {{"exporter", "tleak " + report.run.tleak_version},
            {"time_axis", by_time ? "seconds of the program's run, one sample per point"
                                  : "one millisecond per iteration mark"},
            {"summary", report.summary.sentence}}}};
}

}  // namespace tleak::diagnosis
