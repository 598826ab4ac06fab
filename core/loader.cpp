// Loading a trace: the file read (and inflated), its format found by the registered importers
// (import/importer.h), the surest one run.
#include "core/loader.h"

#include "core/import/importer.h"
#include "core/source.h"

#include <algorithm>
#include <chrono>
#include <sys/resource.h>
#include <thread>

namespace strata {

int64_t peak_rss_bytes() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return int64_t(ru.ru_maxrss) * 1024;
}

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

LoadResult load_source(const std::string& path, ReadResult read, Clock::time_point t0, Progress* progress,
                       const LoadOptions& options) {
  LoadResult result;
  if (!read.status.is_ok()) {
    result.status = std::move(read.status);
    return result;
  }
  auto model = std::make_unique<TraceModel>();
  TraceModel& m = *model;
  m.path = path;
  m.stats.file_bytes = read.file_bytes;
  m.stats.json_bytes = read.buffer.size();
  if (!read.warning.empty()) {
    m.warnings.push_back(read.warning);
    ++m.warning_count;
  }
  auto source = std::make_shared<SourceBuffer>(std::move(read.buffer));
  m.source = source;
  m.stats.seconds_read = seconds_since(t0);
  const std::string_view head(source->data(), std::min<size_t>(source->size(), 64 * 1024));
  const Importer* importer = importer_for(head);
  if (!importer) {
    result.status = Status::unsupported(path + ": not a trace any importer reads (" + std::to_string(source->size()) + " bytes)");
    return result;
  }
  m.stats.importer = importer->name;
  ImportInput in{path, source, options.threads ? options.threads : std::max(1u, std::thread::hardware_concurrency()), progress};
  Status st;
  try {
    st = importer->load(in, m);
  } catch (const std::bad_alloc&) {
    st = Status(StatusCode::OutOfMemory, path + ": out of memory while loading");
  }
  if (!st.is_ok()) {
    // A damaged gzip explains a damaged file: say both.
    result.status = read.warning.empty() ? std::move(st) : Status(st.code(), st.message() + " (" + read.warning + ")");
    return result;
  }
  if (progress) progress->done = progress->total.load();
  m.stats.seconds_total = seconds_since(t0);
  m.stats.model_bytes = m.bytes();
  m.stats.peak_rss_bytes = peak_rss_bytes();
  result.model = std::move(model);
  return result;
}

}  // namespace

LoadResult load_trace(const std::string& path, Progress* progress, const LoadOptions& options) {
  auto t0 = Clock::now();
  if (progress) progress->enter(Stage::Reading);
  return load_source(path, read_source(path, progress), t0, progress, options);
}

LoadResult load_trace_bytes(const std::string& name, std::string_view bytes, Progress* progress,
                            const LoadOptions& options) {
  auto t0 = Clock::now();
  if (progress) progress->enter(Stage::Reading);
  return load_source(name, read_source_bytes(name, bytes, progress), t0, progress, options);
}

}  // namespace strata
