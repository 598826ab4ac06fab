// strata diff A B [--iteration N | N:M] [--json]
// Two runs compared: iterations, phases, layers, GPU work by the op that launched it, the rest
// (docs/diff.md). A and B are trace files, or job directories: then every rank both have,
// and the rank whose iteration changed most in full.
#include "app/cli.h"
#include "app/commands.h"
#include "core/diff/diff.h"
#include "core/json_writer.h"
#include "core/text_format.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>

namespace {

struct DiffArgs {
  std::string a, b, iteration;
  bool json = false;
};

void print(const std::string& s) { std::fwrite(s.data(), 1, s.size(), stdout); }

// --iteration N (both sides) or N:M (A's N, B's M), counted from 1 as the iterations are named.
bool parse_iterations(const std::string& spec, strata::DiffOptions& o) {
  if (spec.empty()) return true;
  long long x = 0, y = 0;
  char extra = 0;
  const int n = std::sscanf(spec.c_str(), "%lld:%lld%c", &x, &y, &extra);
  if (n == 1 && spec.find(':') == std::string::npos) y = x;
  else if (n != 2) return false;
  if (x < 1 || y < 1) return false;
  o.iteration_a = x - 1;
  o.iteration_b = y - 1;
  return true;
}

struct Run {
  LoadedTrace trace;
  bool ok() const { return trace.model != nullptr; }
};

Run open_run(const std::string& path) {
  const strata::AnnotateOptions options;
  Run r{load_for_cli(path, "diff", &options)};
  if (!r.ok()) std::fprintf(stderr, "strata diff: %s\n", r.trace.error.c_str());
  return r;
}

// The chosen iterations exist on both sides, else why not.
std::string check_iterations(const strata::DiffOptions& o, const Run& a, const Run& b) {
  auto check = [](int64_t i, const Run& r, const char* side) -> std::string {
    const size_t n = r.trace.annotation.iterations.size();
    if (i < 0 || size_t(i) < n) return {};
    return strata::strprintf("--iteration: %s has %zu iteration%s, not %lld", side, n, n == 1 ? "" : "s", (long long)i + 1);
  };
  std::string e = check(o.iteration_a, a, "A");
  return e.empty() ? check(o.iteration_b, b, "B") : e;
}

int diff_files(const CLI::App& sub, const DiffArgs& args, const strata::DiffOptions& o) {
  Run a = open_run(args.a);
  if (!a.ok()) return 1;
  Run b = open_run(args.b);
  if (!b.ok()) return 1;
  if (std::string e = check_iterations(o, a, b); !e.empty()) return usage_error(sub, e);
  strata::Diff d = strata::diff_runs(*a.trace.model, a.trace.annotation, *b.trace.model, b.trace.annotation, o);
  print(args.json ? strata::diff_json(d) : strata::diff_text(d));
  return 0;
}

// Two jobs: the ranks both have (by the rank their names give, else by order), one pair in
// memory at a time.
int diff_jobs(const DiffArgs& args, const strata::DiffOptions& o) {
  const strata::Result<std::vector<strata::JobFile>> fa = strata::job_files({args.a});
  if (!fa.is_ok()) return std::fprintf(stderr, "strata diff: %s\n", fa.status().message().c_str()), 1;
  const strata::Result<std::vector<strata::JobFile>> fb = strata::job_files({args.b});
  if (!fb.is_ok()) return std::fprintf(stderr, "strata diff: %s\n", fb.status().message().c_str()), 1;
  auto by_rank = [](const std::vector<strata::JobFile>& files) {
    std::map<int64_t, std::string> out;
    for (size_t i = 0; i < files.size(); ++i) {
      const int64_t r = strata::rank_from_name(files[i].path);
      out[r >= 0 ? r : int64_t(i)] = files[i].path;
    }
    return out;
  };
  const std::map<int64_t, std::string> ra = by_rank(fa.value()), rb = by_rank(fb.value());
  struct RankRow { int64_t rank; strata::Diff diff; };
  std::vector<RankRow> rows;
  size_t worst = 0;
  for (const auto& [rank, path_a] : ra) {
    auto it = rb.find(rank);
    if (it == rb.end()) continue;
    Run a = open_run(path_a);
    if (!a.ok()) return 1;
    Run b = open_run(it->second);
    if (!b.ok()) return 1;
    strata::DiffOptions chosen = o;
    if (!check_iterations(o, a, b).empty()) chosen = {};  // a rank with fewer iterations: its median
    rows.push_back({rank, strata::diff_runs(*a.trace.model, a.trace.annotation, *b.trace.model, b.trace.annotation, chosen)});
    auto change = [](const strata::Diff& d) { return std::abs(d.iteration_b - d.iteration_a); };
    if (change(rows.back().diff) > change(rows[worst].diff)) worst = rows.size() - 1;
  }
  if (rows.empty()) {
    std::fprintf(stderr, "strata diff: %s and %s have no rank in common (%zu and %zu ranks)\n", args.a.c_str(), args.b.c_str(),
                 ra.size(), rb.size());
    return 1;
  }
  const std::string note = strata::strprintf("%zu in A, %zu in B, %zu compared", ra.size(), rb.size(), rows.size());
  if (args.json) {
    strata::JsonWriter w;
    w.begin_object().field("schema", "strata.diff-job/1").field("a", args.a).field("b", args.b);
    w.field("ranks_a", uint64_t(ra.size())).field("ranks_b", uint64_t(rb.size()));
    w.key("ranks").begin_array();
    for (const RankRow& r : rows)
      w.begin_object().field("rank", r.rank).field("a_ns", r.diff.iteration_a).field("b_ns", r.diff.iteration_b)
          .field("delta_ns", r.diff.iteration_b - r.diff.iteration_a).field("aligned_share", r.diff.aligned_share).end_object();
    w.end_array();
    w.field("most_changed_rank", rows[worst].rank);
    std::string body = w.str();  // the rank's full diff, as strata diff A B --json writes it
    body += ",\"diff\":" + strata::diff_json(rows[worst].diff);
    while (!body.empty() && body.back() == '\n') body.pop_back();
    print(body + "}\n");
    return 0;
  }
  std::string out = "Ranks: " + note + "\n";
  out += strata::strprintf("  %-6s %12s %12s %12s %8s\n", "rank", "A", "B", "change", "aligned");
  for (const RankRow& r : rows) {
    const strata::Ns delta = r.diff.iteration_b - r.diff.iteration_a;
    out += strata::strprintf("  %-6lld %12s %12s %12s %7.0f%%\n", (long long)r.rank, strata::format_duration(r.diff.iteration_a).c_str(),
                             strata::format_duration(r.diff.iteration_b).c_str(),
                             ((delta >= 0 ? "+" : "-") + strata::format_duration(std::abs(delta))).c_str(), 100 * r.diff.aligned_share);
  }
  out += strata::strprintf("\nRank %lld, whose iteration changed most:\n", (long long)rows[worst].rank);
  print(out + strata::diff_text(rows[worst].diff));
  return 0;
}

int run_diff(const CLI::App& sub, const DiffArgs& args) {
  strata::DiffOptions o;
  if (!parse_iterations(args.iteration, o))
    return usage_error(sub, "--iteration wants N (both sides) or N:M (A's N, B's M), from 1, not '" + args.iteration + "'");
  const bool dir_a = std::filesystem::is_directory(args.a), dir_b = std::filesystem::is_directory(args.b);
  if (dir_a != dir_b) return usage_error(sub, "compare two traces or two job directories, not one of each");
  return dir_a ? diff_jobs(args, o) : diff_files(sub, args, o);
}

}  // namespace

Command add_diff(CLI::App& strata) {
  auto args = std::make_shared<DiffArgs>();
  CLI::App* sub = add_subcommand(strata, "diff",
                                 "compare two runs: iterations, phases, layers, GPU work by the op that\n"
                                 "launched it, what changed most in words (docs/diff.md)",
                                 "strata diff A B [--iteration N | N:M] [--json]\n"
                                 "  A, B: two trace files, or two job directories (every rank both have)");
  sub->add_option("A", args->a, "the first run (before)")->required()->type_name("FILE|DIR");
  sub->add_option("B", args->b, "the second run (after)")->required()->type_name("FILE|DIR");
  sub->add_option("--iteration", args->iteration, "compare iteration N of each side, or A's N with B's M (from 1); default: the median")
      ->type_name("N|N:M");
  sub->add_flag("--json", args->json, "JSON (docs/diff.md) instead of text");
  return {sub, [sub, args] { return run_diff(*sub, *args); }};
}
