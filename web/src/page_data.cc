#include "page_data.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <string>
#include <unordered_map>
#include <vector>

#include "tleak/diagnosis/report_json.h"
#include "tleak/diagnosis/site_partings.h"

namespace tleak::web::detail {
namespace {

using nlohmann::json;

class StringTable {
 public:
  std::int64_t index(const std::string& s) {
    const auto [it, fresh] = index_.try_emplace(s, static_cast<std::int64_t>(strings_.size()));
    if (fresh) strings_.push_back(s);
    return it->second;
  }
  json to_json() && { return std::move(strings_); }

 private:
  std::unordered_map<std::string, std::int64_t> index_;
  std::vector<std::string> strings_;
};

// Objects of one shape as one column per leaf ("growth.slope_bytes_per_iteration"): a column of one
// value throughout as that value ("c"); numbers, bools and nulls as they are ("v"); a column with
// any string as string-table indices, -1 for null ("s").
class Columns {
 public:
  explicit Columns(StringTable& strings) : strings_(strings) {}

  void add(const json& object, const std::vector<std::string>& skip) {
    add_leaves(object, "", skip);
    ++rows_;
    for (auto& [path, column] : columns_) {
      if (column.values.size() < rows_) column.values.push_back(nullptr);  // absent in this row
    }
  }

  json to_json() {
    json out = json::object();
    for (auto& [path, column] : columns_) {
      const std::vector<json>& values = column.values;
      if (std::all_of(values.begin(), values.end(), [&values](const json& v) { return v == values.front(); })) {
        out[path] = {{"c", column.values.empty() ? json(nullptr) : column.values.front()}, {"n", column.values.size()}};
      } else if (column.interned) {
        json indices = json::array();
        for (const json& v : column.values) indices.push_back(v.is_string() ? strings_.index(v.get<std::string>()) : -1);
        out[path] = {{"s", std::move(indices)}};
      } else {
        out[path] = {{"v", std::move(column.values)}};
      }
    }
    return out;
  }

 private:
  struct Column {
    std::vector<json> values;
    bool interned = false;
  };

  void add_leaves(const json& value, const std::string& path, const std::vector<std::string>& skip) {
    if (value.is_object()) {
      for (const auto& [key, child] : value.items()) {
        const std::string child_path = path.empty() ? key : path + "." + key;
        if (std::find(skip.begin(), skip.end(), child_path) != skip.end()) continue;
        add_leaves(child, child_path, skip);
      }
      return;
    }
    Column& column = columns_[path];
    column.values.resize(rows_, nullptr);  // a leaf first seen in this row
    column.interned = column.interned || value.is_string();
    column.values.push_back(value);
  }

  StringTable& strings_;
  std::size_t rows_ = 0;
  std::map<std::string, Column> columns_;
};

// Sites whose curves the page keeps: every site that is not bounded, then the largest peaks.
std::vector<std::size_t> sites_with_curves(const std::vector<diagnosis::SiteReport>& sites, std::size_t limit) {
  std::vector<std::size_t> order(sites.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  const auto rank = [&](std::size_t i) { return std::pair(sites[i].verdict == "bounded" ? 1 : 0, -sites[i].peak_live_bytes); };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return rank(a) < rank(b); });
  if (order.size() > limit) order.resize(limit);
  std::sort(order.begin(), order.end());
  return order;
}

}  // namespace

json page_data(const diagnosis::Report& report, std::size_t max_curves) {
  StringTable strings;
  Columns site_columns(strings), frame_columns(strings);
  std::unordered_map<std::string, std::int64_t> frame_index;
  json site_frames = json::array();
  const std::vector<diagnosis::SiteReport>& sites = report.sites;
  // What tells a site from those that read alike, as the text says it (no part of the report): by
  // site id, for the sites that have any.
  const std::vector<std::vector<std::string>> vias = diagnosis::via_lines(report, sites.size());
  json site_via = json::object();
  for (std::size_t i = 0; i < sites.size(); ++i) {
    const json site = diagnosis::to_json(sites[i]);
    if (!vias[i].empty()) site_via[std::to_string(sites[i].id)] = vias[i];
    site_columns.add(site, {"frames", "live_bytes_at_samples"});
    json stack = json::array();
    for (const json& frame : site.value("frames", json::array())) {
      const auto [it, fresh] = frame_index.try_emplace(frame.dump(), static_cast<std::int64_t>(frame_index.size()));
      if (fresh) frame_columns.add(frame, {});
      stack.push_back(it->second);
    }
    site_frames.push_back(std::move(stack));
  }
  json curve_sites = json::array(), curves = json::array();
  for (const std::size_t i : sites_with_curves(sites, max_curves)) {
    curve_sites.push_back(i);
    curves.push_back(sites[i].live_bytes_at_samples);
  }
  json rest = diagnosis::to_json_without_sites(report);
  rest.erase("sites");
  json out = {{"page_data", "tleak.page-data/1"},
              {"report", std::move(rest)},
              {"site_count", sites.size()},
              {"sites", site_columns.to_json()},
              {"frame_count", frame_index.size()},
              {"frames", frame_columns.to_json()},
              {"site_frames", std::move(site_frames)},
              {"curve_sites", std::move(curve_sites)},
              {"curves", std::move(curves)},
              {"site_via", std::move(site_via)}};
  out["strings"] = std::move(strings).to_json();
  return out;
}

}  // namespace tleak::web::detail
