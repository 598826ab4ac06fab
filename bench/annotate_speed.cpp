// Annotation speed: annotation + noise reduction + analyses on a large trace.
//
//   strata_bench_annotate_speed TRACE.json [--runs N] [--threads T]
//
// Loads the trace once (not timed), then times annotate() N times and prints the median,
// events per second and each pass's share.
#include "core/annotate/annotation.h"
#include "core/loader.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: strata_bench_annotate_speed TRACE.json [--runs N] [--threads T]\n");
    return 2;
  }
  int runs = 3;
  unsigned threads = 2;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--runs")) runs = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--threads")) threads = unsigned(std::atoi(argv[i + 1]));
  }
  auto t0 = std::chrono::steady_clock::now();
  strata::LoadResult r = strata::load_trace(argv[1]);
  if (!r.model) {
    std::fprintf(stderr, "%s\n", r.error.c_str());
    return 1;
  }
  double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const strata::TraceModel& m = *r.model;
  std::printf("%s: %llu traceEvents entries, %zu timed events, loaded in %.2f s\n", argv[1],
              static_cast<unsigned long long>(m.stats.trace_events), m.ev.size(), load_s);
  std::vector<double> times;
  double passes[6] = {};
  strata::AnnotateOptions opt;
  opt.threads = threads;
  strata::Annotation last;
  for (int i = 0; i < runs; ++i) {
    last = strata::annotate(m, opt);
    times.push_back(last.seconds);
    for (int k = 0; k < 6; ++k) passes[k] += last.pass_seconds[k] / runs;
  }
  std::sort(times.begin(), times.end());
  double med = times[times.size() / 2];
  std::printf("annotate (%u threads): median %.3f s of %d runs (min %.3f, max %.3f); %.1f M timed events/s, "
              "%.1f M traceEvents/s\n",
              threads, med, runs, times.front(), times.back(), double(m.ev.size()) / med / 1e6,
              double(m.stats.trace_events) / med / 1e6);
  std::printf("  %zu iterations, %zu nodes (%zu reduced), %llu/%llu GPU ops annotated\n", last.iterations.size(),
              last.tree.size(), last.reduced.size(), static_cast<unsigned long long>(last.gpu_ops_annotated),
              static_cast<unsigned long long>(last.gpu_ops));
  static const char* names[] = {"structure", "iterations+phases", "layers+backward+tree", "metrics", "reduction",
                                "analyses"};
  for (int k = 0; k < 6; ++k) std::printf("  %-22s %.3f s (mean)\n", names[k], passes[k]);
  return 0;
}
