#include "job_rank.h"

#include <charconv>
#include <climits>

namespace strata::collector {

namespace {

// A whole number from 0 to INT_MAX, as a launcher writes it; -1 when absent or anything else.
int64_t whole_number(const char* text) {
  if (text == nullptr) return -1;
  const std::string_view s(text);
  int64_t v = -1;
  const auto res = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || res.ec != std::errc() || res.ptr != s.data() + s.size() || v < 0 || v > INT_MAX) return -1;
  return v;
}

// Skips "<digits>" at the front of `s`; false when there are none.
bool skip_digits(std::string_view& s) {
  size_t n = 0;
  while (n < s.size() && s[n] >= '0' && s[n] <= '9') ++n;
  s.remove_prefix(n);
  return n > 0;
}

constexpr std::string_view kTraceSuffix = ".pt.trace.json";

// "DIR/": the directory with exactly one slash after it.
std::string with_slash(std::string_view dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.remove_suffix(1);
  std::string out(dir);
  if (out != "/") out += '/';
  return out;
}

}  // namespace

JobRank job_rank(const std::function<const char*(const char*)>& get) {
  static constexpr const char* kPairs[][2] = {{"RANK", "WORLD_SIZE"},
                                               {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                               {"PMI_RANK", "PMI_SIZE"},
                                               {"SLURM_PROCID", "SLURM_NTASKS"},
                                               {"LOCAL_RANK", "LOCAL_WORLD_SIZE"}};
  for (const auto& [rank_var, size_var] : kPairs) {
    JobRank r;
    r.rank = whole_number(get(rank_var));
    if (r.rank < 0) continue;
    const int64_t size = whole_number(get(size_var));
    if (size > r.rank) r.world_size = size;
    return r;
  }
  return {};
}

std::string rank_file_name(int64_t rank, int64_t pid, bool gzip) {
  std::string name = rank >= 0 ? "rank-" + std::to_string(rank) : "pid-" + std::to_string(pid);
  name += kTraceSuffix;
  if (gzip) name += ".gz";
  return name;
}

bool is_rank_file_name(std::string_view name) {
  if (name.starts_with("rank-")) name.remove_prefix(5);
  else if (name.starts_with("pid-")) name.remove_prefix(4);
  else return false;
  if (!skip_digits(name)) return false;
  if (name.starts_with('.') && name.size() > 1 && name[1] >= '0' && name[1] <= '9') {  // ".PID"
    name.remove_prefix(1);
    skip_digits(name);
  }
  if (name.ends_with(".gz")) name.remove_suffix(3);
  return name == kTraceSuffix;
}

std::string rank_file_path(std::string_view dir, int64_t rank, int64_t pid, bool gzip) {
  return with_slash(dir) + rank_file_name(rank, pid, gzip);
}

bool is_rank_file_in(std::string_view path, std::string_view dir) {
  const std::string prefix = with_slash(dir);
  return path.size() > prefix.size() && path.starts_with(prefix) && is_rank_file_name(path.substr(prefix.size()));
}

}  // namespace strata::collector
