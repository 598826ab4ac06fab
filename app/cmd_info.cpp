// strata info FILE [--json]
#include "app/commands.h"
#include "core/loader.h"
#include "core/trace_info.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <unistd.h>
#include <string>
#include <string_view>

namespace {

// Loads on a worker thread; on a terminal, shows progress for loads that take a while.
strata::LoadResult load_with_progress(const std::string& path) {
  strata::Progress progress;
  strata::LoadResult result;
  std::atomic<bool> done{false};
  std::thread worker([&] {
    result = strata::load_trace(path, &progress);
    done = true;
  });
  bool shown = false;
  if (isatty(2)) {
    static const char* stages[] = {"", "reading", "parsing", "building"};
    auto start = std::chrono::steady_clock::now();
    while (!done) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(500)) continue;
      int stage = std::clamp(progress.stage.load(), 0, 3);
      std::fprintf(stderr, "\rstrata: %s %s %3.0f%%", stages[stage], path.c_str(), progress.fraction() * 100);
      shown = true;
    }
  }
  worker.join();
  if (shown) std::fprintf(stderr, "\r\033[K");
  return result;
}

}  // namespace

int cmd_info(int argc, char** argv) {
  std::string path;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--json") json = true;
    else if (a.starts_with("-")) {
      std::fprintf(stderr, "strata info: unknown option '%s'\nusage: strata info FILE [--json]\n", argv[i]);
      return 2;
    } else if (path.empty()) path = a;
    else {
      std::fprintf(stderr, "strata info: one file at a time\n");
      return 2;
    }
  }
  if (path.empty()) {
    std::fprintf(stderr, "usage: strata info FILE [--json]\n");
    return 2;
  }
  strata::LoadResult r = load_with_progress(path);
  if (!r.model) {
    std::fprintf(stderr, "strata: %s\n", r.error.c_str());
    return 1;
  }
  std::string out = json ? strata::info_json(*r.model) : strata::info_text(*r.model);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}
