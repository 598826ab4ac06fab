// strata summary FILE [--json]
#include "app/annotate_cli.h"
#include "app/commands.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string_view>
#include <thread>
#include <unistd.h>

LoadedAnnotation load_and_annotate(const std::string& path, const char* command) {
  LoadedAnnotation out;
  strata::Progress load_progress, annotate_progress;
  std::atomic<int> phase{0};
  std::atomic<bool> done{false};
  std::thread worker([&] {
    strata::LoadResult r = strata::load_trace(path, &load_progress);
    if (!r.model) {
      out.error = r.error;
    } else {
      phase = 1;
      out.annotation = strata::annotate(*r.model, {}, &annotate_progress);
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

int cmd_summary(int argc, char** argv) {
  std::string path;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--json") json = true;
    else if (a.starts_with("-")) {
      std::fprintf(stderr, "strata summary: unknown option '%s'\nusage: strata summary FILE [--json]\n", argv[i]);
      return 2;
    } else if (path.empty()) path = a;
    else {
      std::fprintf(stderr, "strata summary: one file at a time\n");
      return 2;
    }
  }
  if (path.empty()) {
    std::fprintf(stderr, "usage: strata summary FILE [--json]\n");
    return 2;
  }
  LoadedAnnotation r = load_and_annotate(path, "summary");
  if (!r.model) {
    std::fprintf(stderr, "strata: %s\n", r.error.c_str());
    return 1;
  }
  std::string out = json ? strata::summary_json(*r.model, r.annotation) : strata::summary_text(*r.model, r.annotation);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}
