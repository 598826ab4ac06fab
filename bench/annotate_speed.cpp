// Annotation speed: annotation + noise reduction + analyses on a large trace, and how soon a
// cancel stops it.
//
//   strata_bench_annotate_speed TRACE.json [--runs N] [--threads T] [--cancels K]
//
// Loads the trace once (not timed), then times annotate() N times and prints the median,
// events per second and each pass's time. With --cancels, loads and annotates K more times on
// a worker thread with one Progress (as the viewer and the CLI do), cancels each at a point
// spread over the whole pipeline's length, and prints how long the worker took to return after
// the cancel (median, max) and in which stage it was.
#include "core/annotate/annotation.h"
#include "core/loader.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
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
  int runs = 3, cancels = 0;
  unsigned threads = 2;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--runs")) runs = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--threads")) threads = unsigned(std::atoi(argv[i + 1]));
    else if (!std::strcmp(argv[i], "--cancels")) cancels = std::atoi(argv[i + 1]);
  }
  auto t0 = std::chrono::steady_clock::now();
  strata::LoadResult r = strata::load_trace(argv[1]);
  if (!r.model) {
    std::fprintf(stderr, "%s\n", r.error().c_str());
    return 1;
  }
  double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const strata::TraceModel& m = *r.model;
  std::printf("%s: %llu traceEvents entries, %zu timed events, loaded in %.2f s\n", argv[1],
              static_cast<unsigned long long>(m.stats.trace_events), m.ev.size(), load_s);
  std::vector<double> times;
  double passes[strata::kAnnotationPasses] = {};
  strata::AnnotateOptions opt;
  opt.threads = threads;
  strata::Annotation last;
  for (int i = 0; i < runs; ++i) {
    last = strata::annotate(m, opt);
    times.push_back(last.seconds);
    for (int k = 0; k < strata::kAnnotationPasses; ++k) passes[k] += last.pass_seconds[k] / runs;
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
  for (int k = 0; k < strata::kAnnotationPasses; ++k)
    std::printf("  %-36s %.3f s (mean)\n", strata::stage_name(strata::Stage(int(strata::Stage::Structure) + k)), passes[k]);
  if (cancels > 0) {
    std::vector<double> latency;
    for (int i = 0; i < cancels; ++i) {
      strata::Progress progress;
      std::atomic<bool> done{false};
      std::chrono::steady_clock::time_point returned;
      std::thread worker([&] {
        strata::LoadResult lr = strata::load_trace(argv[1], &progress);
        if (lr.model) strata::Annotation a = strata::annotate(*lr.model, opt, &progress);
        returned = std::chrono::steady_clock::now();
        done = true;
      });
      // Spread the cancels over loading and annotating: (i + 1/2) / K of their time.
      std::this_thread::sleep_for(std::chrono::duration<double>((load_s + med) * (double(i) + 0.5) / double(cancels)));
      const strata::Stage at = progress.stage.load();
      const auto asked = std::chrono::steady_clock::now();
      const bool finished = done;
      progress.cancel = true;
      worker.join();
      if (finished) continue;  // the run ended before the cancel
      double ms = std::max(0.0, std::chrono::duration<double, std::milli>(returned - asked).count());
      latency.push_back(ms);
      std::printf("  cancel during %-34s returned after %.1f ms\n", strata::stage_name(at), ms);
    }
    std::sort(latency.begin(), latency.end());
    if (!latency.empty())
      std::printf("cancel latency: median %.1f ms, max %.1f ms over %zu cancels\n", latency[latency.size() / 2],
                  latency.back(), latency.size());
  }
  return 0;
}
