#include "app/cli.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string_view>
#include <thread>
#include <unistd.h>

int parse_file_args(const char* command, const char* usage, bool takes_json, bool takes_output, int argc,
                    char** argv, FileArgs& out) {
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (takes_json && a == "--json") {
      out.json = true;
    } else if (takes_output && (a == "-o" || a == "--output") && i + 1 < argc) {
      out.output = argv[++i];
    } else if (a.starts_with("-")) {
      std::fprintf(stderr, "strata %s: unknown option '%s'\nusage: %s\n", command, argv[i], usage);
      return 2;
    } else if (out.path.empty()) {
      out.path = a;
    } else {
      std::fprintf(stderr, "strata %s: one file at a time\n", command);
      return 2;
    }
  }
  if (out.path.empty() || (takes_output && out.output.empty())) {
    std::fprintf(stderr, "usage: %s\n", usage);
    return 2;
  }
  return 0;
}

LoadedTrace load_for_cli(const std::string& path, const char* command, bool annotate) {
  LoadedTrace out;
  strata::Progress load_progress, annotate_progress;
  std::atomic<int> phase{0};
  std::atomic<bool> done{false};
  std::thread worker([&] {
    strata::LoadResult r = strata::load_trace(path, &load_progress);
    if (!r.model) {
      out.error = r.error;
    } else {
      phase = 1;
      if (annotate) out.annotation = strata::annotate(*r.model, {}, &annotate_progress);
      out.model = std::move(r.model);
    }
    done = true;
  });
  bool shown = false;
  if (isatty(2)) {
    static const char* load_stages[] = {"", "reading", "parsing", "building"};
    static const char* ann_stages[] = {"", "structure", "phases", "layers", "metrics", "reduction", "analyses"};
    auto start = std::chrono::steady_clock::now();
    while (!done) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(500)) continue;
      if (phase == 0) {
        int s = std::clamp(load_progress.stage.load(), 0, 3);
        std::fprintf(stderr, "\rstrata %s: %s %s %3.0f%%\033[K", command, load_stages[s], path.c_str(),
                     load_progress.fraction() * 100);
      } else {
        int s = std::clamp(annotate_progress.stage.load(), 0, 6);
        std::fprintf(stderr, "\rstrata %s: annotating (%s)\033[K", command, ann_stages[s]);
      }
      shown = true;
    }
  }
  worker.join();
  if (shown) std::fprintf(stderr, "\r\033[K");
  return out;
}
