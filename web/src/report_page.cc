#include "tleak/web/report_page.h"

#include "page_data.h"

#include <cstddef>
#include <stdexcept>
#include <string_view>

namespace tleak::web {
namespace detail {
extern const unsigned char kPageTemplate[];
extern const std::size_t kPageTemplateSize;
}  // namespace detail

namespace {

constexpr std::string_view kDataMark = "<!--TLEAK_DATA-->";

// JSON inside a <script> element: '<' can only occur in strings, where \u003c means the same and
// no "</script" or "<!--" can end or confuse the element.
std::string script_safe_json(const nlohmann::json& value) {
  const std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size() + text.size() / 64);
  for (const char c : text) {
    if (c == '<') {
      out += "\\u003c";
    } else {
      out += c;
    }
  }
  return out;
}

// The page template with `value` where its script reads its data.
std::string page_with(const nlohmann::json& value) {
  const std::string_view page(reinterpret_cast<const char*>(detail::kPageTemplate), detail::kPageTemplateSize);
  const std::size_t mark = page.find(kDataMark);
  if (mark == std::string_view::npos) throw std::logic_error("report page template has no data mark");
  std::string out;
  const std::string data = script_safe_json(value);
  out.reserve(page.size() + data.size());
  out.append(page.substr(0, mark));
  out.append(data);
  out.append(page.substr(mark + kDataMark.size()));
  return out;
}

}  // namespace

std::string report_page(const diagnosis::Report& report) { return page_with(detail::page_data(report)); }

std::string diff_page(const nlohmann::json& diff, const diagnosis::Report& a, const diagnosis::Report& b) {
  return page_with({{"diff", diff}, {"a", detail::page_data(a)}, {"b", detail::page_data(b)}});
}

}  // namespace tleak::web
