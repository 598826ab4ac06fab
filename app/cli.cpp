#include "app/cli.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string_view>
#include <thread>
#include <unistd.h>

int parse_file_args(const ArgSpec& spec, int argc, char** argv, FileArgs& out) {
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (spec.json && a == "--json") {
      out.json = true;
    } else if (spec.output && (a == "-o" || a == "--output") && i + 1 < argc) {
      out.output = argv[++i];
    } else if (spec.item && a == "--item" && i + 1 < argc) {
      out.item = argv[++i];
    } else if (a.starts_with("-")) {
      std::fprintf(stderr, "strata %s: unknown option '%s'\nusage: %s\n", spec.command, argv[i], spec.usage);
      return 2;
    } else if (out.path.empty()) {
      out.path = a;
    } else {
      std::fprintf(stderr, "strata %s: one file at a time\n", spec.command);
      return 2;
    }
  }
  if (out.path.empty() || (spec.output && out.output.empty())) {
    std::fprintf(stderr, "usage: %s\n", spec.usage);
    return 2;
  }
  return 0;
}

LoadedTrace load_for_cli(const std::string& path, const char* command, bool annotate) {
  LoadedTrace out;
  strata::Progress progress;
  std::atomic<bool> done{false};
  std::thread worker([&] {
    strata::LoadResult r = strata::load_trace(path, &progress);
    if (!r.model) {
      out.error = r.error;
    } else {
      if (annotate) out.annotation = strata::annotate(*r.model, {}, &progress);
      out.model = std::move(r.model);
    }
    done = true;
  });
  bool shown = false;
  if (isatty(2)) {
    auto start = std::chrono::steady_clock::now();
    while (!done) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(500)) continue;
      const strata::Stage s = progress.stage.load();
      if (s <= strata::Stage::Building)
        std::fprintf(stderr, "\rstrata %s: %s %s %3.0f%%\033[K", command, strata::stage_name(s), path.c_str(), progress.fraction() * 100);
      else
        std::fprintf(stderr, "\rstrata %s: %s\033[K", command, strata::stage_name(s));
      shown = true;
    }
  }
  worker.join();
  if (shown) std::fprintf(stderr, "\r\033[K");
  return out;
}
