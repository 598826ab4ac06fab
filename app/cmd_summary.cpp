// strata summary FILE [--json] [--item PATH]    one trace
// strata summary DIR | FILE1 FILE2 ... [--json]  a job: every rank's trace
// strata summary --merge SUMMARY.json ... [--json]  a job from per-rank summaries made anywhere
#include "app/cli.h"
#include "app/commands.h"
#include "core/json_writer.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace {

const char* kUsage =
    "strata summary FILE [--json] [--model MODEL.txt] [--item \"Iteration 3/Backward\" | --range A:B | --memory-at T|peak]\n"
    "                                                      (times: ms from the trace's start; MODEL.txt: print(model))\n"
    "       strata summary DIR | FILE1 FILE2 ... [--json]         (a job: one trace per rank)\n"
    "       strata summary --merge RANK.json ... [--json]         (per-rank `strata summary FILE --json` outputs)";

void print(const std::string& s) { std::fwrite(s.data(), 1, s.size(), stdout); }

int summarize_trace(const FileArgs& args) {
  const std::string& path = args.inputs[0];
  LoadedTrace r = load_for_cli(path, "summary", &args.annotate);
  if (!r.model) {
    std::fprintf(stderr, "strata: %s\n", r.error.c_str());
    return 1;
  }
  const strata::Annotation& a = r.annotation;
  if (!args.range.empty()) {
    // What falls inside a stretch of time, as the viewer's measured range shows it.
    double from = 0, to = 0;
    if (std::sscanf(args.range.c_str(), "%lf:%lf", &from, &to) != 2 || !(to > from)) {
      std::fprintf(stderr, "strata summary: --range A:B wants two times in ms, A < B (from the trace's start)\n");
      return 2;
    }
    const strata::Ns origin = r.model->time_begin;
    strata::RangeFigures rf = strata::range_figures(*r.model, a, origin + strata::Ns(from * 1e6), origin + strata::Ns(to * 1e6));
    print(args.json ? strata::range_json(rf) : strata::range_text(rf));
    return 0;
  }
  if (!args.memory_at.empty()) {
    // What is allocated at a moment, as the viewer's memory details show it.
    std::string error;
    const uint32_t e = memory_event_for(*r.model, a, args.memory_at, error);
    if (e == UINT32_MAX) {
      std::fprintf(stderr, "strata summary: %s: %s\n", path.c_str(), error.c_str());
      return 1;
    }
    const strata::LiveMemory l = strata::live_memory(*r.model, a, e);
    if (!args.json) {
      print(strata::live_memory_text(*r.model, l));
      return 0;
    }
    strata::JsonWriter w;
    w.begin_object();
    strata::write_live_memory_fields(w, *r.model, l);
    w.end_object();
    print(w.str() + "\n");
    return 0;
  }
  if (!args.item.empty()) {
    // One item's figures, as the viewer's details panel shows them.
    strata::NodeId n = strata::find_node(a.tree, args.item);
    if (n == strata::kNoNode) {
      std::fprintf(stderr, "strata summary: no annotation item '%s'\n", args.item.c_str());
      return 1;
    }
    strata::WorkFigures w = strata::node_work(*r.model, a, n);
    print(args.json ? strata::work_json(a.tree.path(n), w) : strata::work_text(a.tree.path(n), w));
    return 0;
  }
  if (!args.json) {
    print(strata::summary_text(*r.model, a));
    return 0;
  }
  // With the rank's data, for `--merge`.
  int64_t rank = r.model->distributed.rank >= 0 ? r.model->distributed.rank : strata::rank_from_name(path);
  print(strata::rank_summary_json(*r.model, a, strata::rank_data(*r.model, a, rank)));
  return 0;
}

int merge_summaries(const FileArgs& args) {
  std::vector<strata::RankData> ranks;
  for (const std::string& path : args.inputs) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream text;
    text << f.rdbuf();
    if (!f) {
      std::fprintf(stderr, "strata summary: cannot read %s\n", path.c_str());
      return 1;
    }
    strata::RankData r;
    std::string error;
    if (!strata::read_rank_data(text.str(), r, error)) {
      std::fprintf(stderr, "strata summary: %s: %s\n", path.c_str(), error.c_str());
      return 1;
    }
    ranks.push_back(std::move(r));
  }
  std::stable_sort(ranks.begin(), ranks.end(), [](auto& a, auto& b) { return a.rank < b.rank; });
  for (size_t i = 0; i + 1 < ranks.size(); ++i)
    if (ranks[i].rank == ranks[i + 1].rank) {
      std::fprintf(stderr, "strata summary: two summaries are of rank %lld (%s, %s)\n", (long long)ranks[i].rank,
                   ranks[i].file.c_str(), ranks[i + 1].file.c_str());
      return 1;
    }
  strata::JobAnalysis j = strata::analyze_job(ranks);
  print(args.json ? strata::job_summary_json(ranks, j) : strata::job_summary_text(ranks, j));
  return 0;
}

}  // namespace

int cmd_summary(int argc, char** argv) {
  FileArgs args;
  ArgSpec spec{"summary", kUsage, true, false, true, true, true, true};
  spec.model = true;
  if (int rc = parse_file_args(spec, argc, argv, args)) return rc;
  if (args.merge) return merge_summaries(args);
  if (args.single_file()) return summarize_trace(args);
  if (!args.item.empty() || !args.range.empty() || !args.memory_at.empty()) {
    std::fprintf(stderr, "strata summary: --item, --range and --memory-at take one trace, not a job\n");
    return 2;
  }
  strata::Job job;
  if (!load_job_for_cli(args.inputs, "summary", false, job)) return 1;
  print(args.json ? strata::job_summary_json(job.data, job.analysis) : strata::job_summary_text(job.data, job.analysis));
  return 0;
}
