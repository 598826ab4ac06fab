// Loading a PyTorch profiler (Kineto) trace, plain or gzipped, into the trace model.
#pragma once

#include "core/base/status.h"
#include "core/progress.h"
#include "core/trace_model.h"

#include <memory>
#include <string>

namespace strata {

struct LoadOptions {
  unsigned threads = 0;  // 0: one per core
};

struct LoadResult {
  std::unique_ptr<TraceModel> model;  // null when `status` is not ok
  Status status;                      // Cancelled when cancelled
  // One line naming the file and where it went wrong; empty with a model.
  const std::string& error() const { return status.message(); }
};

// Progress counts bytes of the file (while reading a .gz) and then of the JSON.
// Stages: 1 reading, 2 parsing, 3 building the model.
LoadResult load_trace(const std::string& path, Progress* progress = nullptr, const LoadOptions& options = {});
// The same for a file's bytes already in memory (`name` is used in messages).
LoadResult load_trace_bytes(const std::string& name, std::string_view bytes, Progress* progress = nullptr,
                            const LoadOptions& options = {});

int64_t peak_rss_bytes();

}  // namespace strata
