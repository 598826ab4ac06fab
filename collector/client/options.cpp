#include "options.h"

#include <sys/stat.h>

#include <charconv>
#include <cmath>
#include <ctime>

#include "protocol/kinds.h"
#include "protocol/metrics.h"

namespace strata::collector {

bool parse_seconds(const std::string& text, uint64_t& ms) {
  double s = 0;
  auto res = std::from_chars(text.data(), text.data() + text.size(), s);
  if (res.ec != std::errc() || res.ptr != text.data() + text.size() || !std::isfinite(s) || s < 0 || s > 1e7)
    return false;
  ms = static_cast<uint64_t>(std::llround(s * 1000.0));
  return true;
}

Result<bool> parse_record_option(int argc, char** argv, int& i, RecordOptions& opt) {
  const auto refuse = [](std::string why) { return Status::invalid(std::move(why)); };
  const std::string a = argv[i];
  const bool takes_value = a == "--duration" || a == "--iterations" || a == "--delay" || a == "--pattern" || a == "--kinds" ||
                           a == "--metrics" || a == "--kernels" || a == "-o";
  if (a == "--profiler-range") {
    opt.source = "profiler";
    return true;
  }
  if (a == "--gzip") {
    opt.gzip = true;
    return true;
  }
  if (!takes_value) return false;
  if (i + 1 >= argc) return refuse(a + " needs a value");
  const std::string v = argv[++i];
  const std::string week = std::to_string(kMaxDurationMs / 1000);
  if (a == "--duration" && (!parse_seconds(v, opt.duration_ms) || opt.duration_ms == 0 || opt.duration_ms > kMaxDurationMs))
    return refuse("--duration takes seconds > 0 (at most " + week + "), e.g. --duration 2.5");
  if (a == "--delay" && (!parse_seconds(v, opt.delay_ms) || opt.delay_ms > kMaxDelayMs))
    return refuse("--delay takes seconds (at most " + week + "), e.g. --delay 10");
  if (a == "--iterations") {
    uint32_t n = 0;
    auto res = std::from_chars(v.data(), v.data() + v.size(), n);
    if (res.ec != std::errc() || res.ptr != v.data() + v.size() || n == 0 || n > kMaxIterations)
      return refuse("--iterations takes a count from 1 to " + std::to_string(kMaxIterations));
    opt.iterations = n;
  } else if (a == "--pattern") {
    opt.pattern = v;
  } else if (a == "--kinds") {
    const Result<uint32_t> mask = parse_kinds(v);
    if (!mask.is_ok()) return refuse("--kinds: " + mask.status().message());
    opt.kinds = kinds_text(mask.value());
  } else if (a == "--metrics") {
    const Result<std::vector<std::string>> names = parse_metrics(v);
    if (!names.is_ok()) return refuse("--metrics: " + names.status().message());
    opt.metrics = metrics_text(names.value());
  } else if (a == "--kernels") {
    if (Status st = check_kernel_glob(v); !st.is_ok()) return refuse("--kernels: " + st.message());
    opt.kernels = v;
  } else if (a == "-o") {
    opt.output = absolute_path(v);
  }
  if (opt.duration_ms > 0 && opt.iterations > 0) return refuse("give --duration or --iterations, not both");
  return true;
}

Status check_record_options(const RecordOptions& opt) {
  if (!opt.kernels.empty() && opt.metrics.empty())
    return Status::invalid("--kernels chooses the kernels --metrics profiles: give --metrics LIST too");
  return Status::ok();
}

std::string timestamped_name(const std::string& prefix, const std::string& suffix) {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "-%Y%m%d-%H%M%S", &tm);
  return absolute_path(prefix + stamp + suffix);
}

bool names_directory(const std::string& path) {
  struct stat st {};
  return (!path.empty() && path.back() == '/') || (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode));
}

}  // namespace strata::collector
