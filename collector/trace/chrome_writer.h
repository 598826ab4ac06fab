// Streams compact records as Kineto-compatible Chrome trace JSON, one event per line.
// Works incrementally: the file is valid up to the last written line while recording
// goes on, and finish() closes it. Bookkeeping for joins (flows, external ids, NVTX
// range pairs) is bounded; evictions are counted rather than growing without limit.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "records.h"
#include "trace_sink.h"

namespace strata::collector {

class ChromeTraceWriter {
 public:
  explicit ChromeTraceWriter(TraceSink& sink, size_t max_pending = size_t{1} << 20);

  void begin(const TraceHeader& header);
  void add(const Record& r);
  // A range whose start CUPTI did not record (it began the recording): the next range end
  // on that thread whose start is unknown closes it.
  void add_open_range(uint64_t start, uint32_t pid, uint32_t tid, std::string name);
  // Writes a cuda_profiler_range event with the counters when their kernel is seen (either
  // order; joins are bounded like flows).
  void add_counters(const KernelCounters& k);
  // A line for the trace's "collector" notes (why metrics stopped, ...).
  void add_note(std::string text) { notes_.push_back(std::move(text)); }
  // Closes ranges still open at the latest timestamp seen, writes row names and stats.
  void finish(const TraceStats& stats);

  // Events that reached the sink's output (all of them, unless it failed).
  uint64_t events_written() const { return sink_.events_stored(); }

 private:
  struct CpuSide {
    uint64_t ts;
    uint32_t pid;
    uint32_t tid;
  };
  struct GpuSide {
    uint64_t ts;
    uint32_t device;
    uint32_t stream;
  };
  struct OpenRange {
    uint64_t start;
    uint32_t pid;
    uint32_t tid;
    std::string name;
    std::string domain;
  };

  void open_event(std::string_view ph, std::string_view cat, std::string_view name, uint64_t pid,
                  uint64_t tid, uint64_t ts);
  void duration(uint64_t start, uint64_t end);
  void arg(std::string_view key, uint64_t value);
  void arg(std::string_view key, double value);
  void arg(std::string_view key, std::string_view value);
  void arg3(std::string_view key, const int32_t v[3]);
  void close_event();
  void ts_value(uint64_t ns);
  // Names a row (and its process) the first time an event lands on it, so a file read while it
  // grows already has them.
  void gpu_row(uint32_t device, uint32_t stream);
  void cpu_row(uint32_t pid, uint32_t tid);
  using Rows = std::set<std::pair<uint32_t, uint32_t>>;
  // Adds (pid, tid) to `rows`; false if it was there. `first_of_pid`: no other row of pid yet.
  static bool add_row(Rows& rows, uint32_t pid, uint32_t tid, bool* first_of_pid);
  void metadata(std::string_view what, uint32_t pid, uint32_t tid, std::string_view name);

  void gpu_op(const Record& r);
  void api_call(const Record& r);
  void sync(const Record& r);
  void overhead(const Record& r);
  void range_end(const Record& r);
  void mark(const Record& r);
  struct KernelSide {
    uint64_t start;
    uint64_t end;
    uint32_t device;
    uint32_t stream;
    std::string name;
  };
  struct CountersWaiting {
    uint32_t device;
    uint64_t launched;
    std::string kernel;
    std::vector<double> values;
  };
  void profiler_range(uint32_t correlation, const KernelSide& kernel, const double* values);
  void link_flow(uint32_t correlation, const CpuSide* cpu, const GpuSide* gpu);
  void flow_pair(uint32_t correlation, const CpuSide& cpu, const GpuSide& gpu);
  uint64_t external_id(uint32_t correlation) const;
  const DeviceRecord* device(uint32_t id) const;
  void note_time(uint64_t ns);
  template <class Map>
  void bound(Map& map);

  TraceSink& sink_;
  size_t max_pending_;
  TraceHeader header_;
  std::string line_;
  bool args_open_ = false;
  uint64_t events_ = 0;
  uint64_t latest_ns_ = 0;
  uint64_t evicted_ = 0;
  std::unordered_map<uint32_t, uint64_t> external_;  // correlation -> External id
  std::unordered_map<uint32_t, CpuSide> api_waiting_;  // launches whose GPU op is not seen yet
  std::unordered_map<uint32_t, GpuSide> gpu_waiting_;  // GPU ops whose launch is not seen yet
  std::unordered_map<uint32_t, uint32_t> context_device_;
  std::unordered_map<uint32_t, OpenRange> open_ranges_;
  std::map<std::pair<uint32_t, uint32_t>, OpenRange> orphan_starts_;  // (pid, tid)
  std::unordered_map<uint32_t, CountersWaiting> counters_waiting_;  // counters whose kernel is not seen yet
  // The latest kernels, for counters that arrive after their kernel (rare: the counters are
  // read at the launch's return, the kernel's record comes later). Kept only with metrics.
  static constexpr size_t kRecentKernels = 1024;
  std::vector<std::pair<uint32_t, KernelSide>> recent_kernels_;
  size_t recent_next_ = 0;
  uint64_t profiled_ranges_ = 0;
  std::vector<std::string> notes_;
  Rows gpu_rows_;  // (device, stream)
  Rows cpu_rows_;  // (pid, tid)
};

}  // namespace strata::collector
