#include "kinds.h"

#include <array>
#include <optional>
#include <utility>

namespace strata::collector {

namespace {

constexpr std::array<std::pair<std::string_view, uint32_t>, 10> kNames = {{
    {"kernel", kKindKernel},
    {"memcpy", kKindMemcpy},
    {"memset", kKindMemset},
    {"runtime", kKindRuntime},
    {"runtime-all", kKindRuntimeAll},
    {"driver", kKindDriver},
    {"sync", kKindSync},
    {"nvtx", kKindNvtx},
    {"overhead", kKindOverhead},
    {"external", kKindExternal},
}};

std::optional<uint32_t> lookup(std::string_view word) {
  if (word == "default") return kDefaultKinds;
  if (word == "all") return kAllKinds;
  for (const auto& [name, bit] : kNames)
    if (name == word) return bit;
  return std::nullopt;
}

}  // namespace

Result<uint32_t> parse_kinds(std::string_view text) {
  uint32_t mask = 0;
  bool relative = false, absolute = false;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    std::string_view word = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    while (!word.empty() && word.front() == ' ') word.remove_prefix(1);
    while (!word.empty() && word.back() == ' ') word.remove_suffix(1);
    if (word.empty()) continue;
    const char sign = word.front() == '+' || word.front() == '-' ? word.front() : '\0';
    if (sign != '\0') word.remove_prefix(1);
    const auto bits = lookup(word);
    if (!bits)
      return Status::invalid("unknown kind '" + std::string(word) +
                             "' (kernel, memcpy, memset, runtime, runtime-all, driver, sync, nvtx, overhead, external, default, all)");
    if (sign != '\0' && !relative && !absolute) mask = kDefaultKinds;
    (sign != '\0' ? relative : absolute) = true;
    if (sign == '-') mask &= ~*bits;
    else mask |= *bits;
  }
  if (mask == 0) return Status::invalid("no kinds to record");
  return mask;
}

std::string kinds_text(uint32_t mask) {
  std::string out;
  for (const auto& [name, bit] : kNames)
    if ((mask & bit) != 0) out += (out.empty() ? "" : ",") + std::string(name);
  return out;
}

}  // namespace strata::collector
