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

// --range A:B, checked before the trace loads.
std::string range_check(const std::string& v) {
  double from = 0, to = 0;
  if (std::sscanf(v.c_str(), "%lf:%lf", &from, &to) == 2 && to > from) return {};
  return "wants two times in ms, A < B (from the trace's start), not '" + v + "'";
}

struct SummaryArgs {
  std::vector<std::string> inputs;
  std::string item;       // --item: an annotation node's path ("Iteration 3/Backward")
  std::string range;      // --range: "A:B", milliseconds from the trace's start
  std::string memory_at;  // --memory-at: "peak", or ms from the trace's start
  std::string model;      // --model: print(model) text
  strata::AnnotateOptions annotate;
  double peak_tflops = 0, peak_tbps = 0;  // --peak-tflops, --peak-bandwidth: the efficiency roofline's
  bool json = false;
  bool merge = false;  // the inputs are per-rank summaries
};

void print(const std::string& s) { std::fwrite(s.data(), 1, s.size(), stdout); }

int summarize_trace(const CLI::App& sub, const SummaryArgs& args) {
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
      return usage_error(sub, "--range A:B wants two times in ms, A < B (from the trace's start)");
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

int merge_summaries(const SummaryArgs& args) {
  std::vector<strata::RankData> ranks;
  for (const std::string& path : args.inputs) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream text;
    text << f.rdbuf();
    if (!f) {
      std::fprintf(stderr, "strata summary: cannot read %s\n", path.c_str());
      return 1;
    }
    strata::Result<strata::RankData> r = strata::read_rank_data(text.str());
    if (!r.is_ok()) {
      std::fprintf(stderr, "strata summary: %s: %s\n", path.c_str(), r.status().message().c_str());
      return 1;
    }
    ranks.push_back(std::move(r.value()));
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

int run_summary(const CLI::App& sub, SummaryArgs& args) {
  if (args.merge) return merge_summaries(args);
  if (!apply_model_option(sub, args.model, args.annotate)) return 1;
  args.annotate.roofline.flops = args.peak_tflops * 1e12;
  args.annotate.roofline.bandwidth = args.peak_tbps * 1e12;
  if (single_file(args.inputs)) return summarize_trace(sub, args);
  if (!args.item.empty() || !args.range.empty() || !args.memory_at.empty())
    return usage_error(sub, "--item, --range and --memory-at take one trace, not a job");
  strata::Job job;
  if (!load_job_for_cli(args.inputs, "summary", false, job)) return 1;
  print(args.json ? strata::job_summary_json(job.data, job.analysis) : strata::job_summary_text(job.data, job.analysis));
  return 0;
}

}  // namespace

Command add_summary(CLI::App& strata) {
  auto args = std::make_shared<SummaryArgs>();
  CLI::App* sub = add_subcommand(
      strata, "summary",
      "iterations, phases, top layers and ops, utilisation, idle causes,\n"
      "memory; a job's, with stragglers; --merge: from per-rank summaries",
      "strata summary FILE [--json] [--model MODEL.txt] [--item PATH | --range A:B | --memory-at T|peak]\n"
      "strata summary DIR | FILE1 FILE2 ... [--json]      (a job: one trace per rank)\n"
      "strata summary --merge RANK.json ... [--json]      (per-rank `strata summary FILE --json`)");
  add_inputs(*sub, args->inputs);
  sub->add_flag("--json", args->json, "JSON (docs/summary-json.md) instead of text");
  CLI::Option* item = sub->add_option("--item", args->item, "one item's figures, as the viewer's details panel shows them")
                          ->type_name("PATH");
  CLI::Option* range = sub->add_option("--range", args->range, "what falls between A and B (ms from the trace's start)")
                           ->type_name("A:B")
                           ->check(range_check);
  CLI::Option* memory_at =
      sub->add_option("--memory-at", args->memory_at, "what is allocated then (ms from the trace's start, or the peak),\n"
                                                      "by category, layer and op")
          ->type_name("T|peak");
  item->excludes(range)->excludes(memory_at);
  range->excludes(memory_at);
  add_model_option(*sub, args->model);
  sub->add_option("--roofline-device", args->annotate.roofline.device,
                  "efficiency: this device's roofline, not the trace's\n(\"H100 SXM\", \"A100 80GB\", \"MI300X\"; docs/efficiency.md)")
      ->type_name("NAME");
  sub->add_option("--peak-tflops", args->peak_tflops, "efficiency: one peak for every number format, TFLOP/s")
      ->check(CLI::PositiveNumber);
  sub->add_option("--peak-bandwidth", args->peak_tbps, "efficiency: the device's memory bandwidth, TB/s")->check(CLI::PositiveNumber);
  sub->add_flag("--merge", args->merge,
                "the inputs are per-rank `strata summary FILE --json` outputs,\n"
                "made anywhere (a Slurm array, xargs): the job's summary (docs/jobs.md)")
      ->excludes(item)
      ->excludes(range)
      ->excludes(memory_at);
  return {sub, [sub, args] { return run_summary(*sub, *args); }};
}
