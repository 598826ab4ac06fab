#include "metrics.h"

#include <algorithm>

namespace strata::collector {

namespace {

bool metric_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
}

}  // namespace

Result<std::vector<std::string>> parse_metrics(std::string_view text) {
  const auto refuse = [](std::string why) { return Status::invalid(std::move(why)); };
  std::vector<std::string> out;
  for (size_t at = 0; at <= text.size();) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string_view name = text.substr(at, comma - at);
    at = comma + 1;
    if (name.empty()) return refuse("an empty metric name (give a comma-separated list, e.g. gpu__time_duration.sum)");
    if (name.size() > kMaxMetricNameBytes)
      return refuse("metric name longer than " + std::to_string(kMaxMetricNameBytes) + " bytes");
    if (!std::all_of(name.begin(), name.end(), metric_char))
      return refuse("metric '" + std::string(name.substr(0, 40)) + "': names hold letters, digits, '_' and '.'");
    if (std::find(out.begin(), out.end(), name) != out.end()) return refuse("metric " + std::string(name) + " given twice");
    if (out.size() == kMaxMetrics)
      return refuse("more than " + std::to_string(kMaxMetrics) + " metrics (each adds replay passes of every profiled kernel)");
    out.emplace_back(name);
  }
  return out;
}

std::string metrics_text(const std::vector<std::string>& metrics) {
  std::string s;
  for (const std::string& m : metrics) s += (s.empty() ? "" : ",") + m;
  return s;
}

Status check_kernel_glob(std::string_view glob) {
  if (glob.empty()) return Status::invalid("the kernel glob is empty (default: *, every kernel)");
  if (glob.size() > kMaxKernelGlobBytes)
    return Status::invalid("the kernel glob is longer than " + std::to_string(kMaxKernelGlobBytes) + " bytes");
  for (size_t i = 0; i < glob.size(); ++i) {
    if (glob[i] == '\\') {
      if (++i == glob.size()) return Status::invalid("the kernel glob ends in a lone '\\'");
    } else if (glob[i] == '[') {
      // fnmatch: a ']' right after '[' or "[!" is part of the set.
      size_t j = i + 1;
      if (j < glob.size() && (glob[j] == '!' || glob[j] == '^')) ++j;
      if (j < glob.size() && glob[j] == ']') ++j;
      while (j < glob.size() && glob[j] != ']') ++j;
      if (j == glob.size()) return Status::invalid("the kernel glob has a '[' that is never closed");
      i = j;
    }
  }
  return Status::ok();
}

}  // namespace strata::collector
