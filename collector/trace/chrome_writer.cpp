#include "chrome_writer.h"

#include "core/base/json_escape.h"
#include "core/base/us_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iterator>

namespace strata::collector {

namespace {

std::string_view memcpy_kind_name(uint32_t k) {
  static constexpr std::string_view kNames[] = {"Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                                "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
  return k < std::size(kNames) ? kNames[k] : kNames[0];
}

std::string_view memory_kind_name(uint32_t k) {
  static constexpr std::string_view kNames[] = {"Unknown", "Pageable", "Pinned",        "Device",
                                                "Array",   "Managed",  "Device Static", "Managed Static"};
  return k < std::size(kNames) ? kNames[k] : kNames[0];
}

std::string_view sync_name(uint32_t type) {
  switch (static_cast<SyncType>(type)) {
    case SyncType::EventSync: return "cudaEventSynchronize";
    case SyncType::StreamWaitEvent: return "cudaStreamWaitEvent";
    case SyncType::StreamSync: return "cudaStreamSynchronize";
    case SyncType::ContextSync: return "cudaDeviceSynchronize";
    case SyncType::Unknown: break;
  }
  return "Synchronize";
}

void append_uint(std::string& out, uint64_t v) {
  char buf[24];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, res.ptr);
}

}  // namespace

ChromeTraceWriter::ChromeTraceWriter(TraceSink& sink, size_t max_pending)
    : sink_(sink), max_pending_(max_pending) {}

void ChromeTraceWriter::begin(const TraceHeader& header) {
  header_ = header;
  std::string& s = line_;
  s = "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [";
  for (size_t i = 0; i < header.devices.size(); ++i) {
    const DeviceRecord& d = header.devices[i];
    s += i ? ",\n    {" : "\n    {";
    s += "\"id\": " + std::to_string(d.id) + ", \"name\": \"";
    append_json_escaped(s, d.name);
    s += "\", \"totalGlobalMem\": " + std::to_string(d.total_global_mem) +
         ", \"computeMajor\": " + std::to_string(d.compute_major) +
         ", \"computeMinor\": " + std::to_string(d.compute_minor) +
         ", \"maxThreadsPerBlock\": " + std::to_string(d.max_threads_per_block) +
         ", \"maxThreadsPerMultiprocessor\": " + std::to_string(d.max_threads_per_sm) +
         ", \"regsPerBlock\": " + std::to_string(d.regs_per_block) +
         ", \"regsPerMultiprocessor\": " + std::to_string(d.regs_per_sm) +
         ", \"warpSize\": " + std::to_string(d.warp_size) +
         ", \"sharedMemPerBlock\": " + std::to_string(d.shared_mem_per_block) +
         ", \"sharedMemPerMultiprocessor\": " + std::to_string(d.shared_mem_per_sm) +
         ", \"numSms\": " + std::to_string(d.num_sms) +
         ", \"sharedMemPerBlockOptin\": " + std::to_string(d.shared_mem_per_block_optin) + "}";
  }
  s += header.devices.empty() ? "],\n" : "\n  ],\n";
  if (header.rank >= 0) {  // as torch.profiler writes it, so a job's files name their ranks
    s += "  \"distributedInfo\": {\"rank\": " + std::to_string(header.rank);
    if (header.world_size > 0) s += ", \"world_size\": " + std::to_string(header.world_size);
    s += "},\n";
  }
  s += "  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": " + std::to_string(header.base_ns) +
       ",\n  \"traceEvents\": [";
  sink_.write(s);
}

void ChromeTraceWriter::metadata(std::string_view what, uint32_t pid, uint32_t tid, std::string_view name) {
  open_event("M", "__metadata", what, pid, tid, header_.base_ns);
  arg("name", name);
  close_event();
}

bool ChromeTraceWriter::add_row(Rows& rows, uint32_t pid, uint32_t tid, bool* first_of_pid) {
  const auto [it, added] = rows.insert({pid, tid});
  if (!added) return false;
  const bool before = it != rows.begin() && std::prev(it)->first == pid;
  const bool after = std::next(it) != rows.end() && std::next(it)->first == pid;
  *first_of_pid = !before && !after;
  return true;
}

void ChromeTraceWriter::gpu_row(uint32_t device, uint32_t stream) {
  bool first = false;
  if (!add_row(gpu_rows_, device, stream, &first)) return;
  if (first) metadata("process_name", device, 0, "GPU " + std::to_string(device));
  metadata("thread_name", device, stream, "stream " + std::to_string(stream));
}

void ChromeTraceWriter::cpu_row(uint32_t pid, uint32_t tid) {
  bool first = false;
  if (!add_row(cpu_rows_, pid, tid, &first)) return;
  if (first)
    metadata("process_name", pid, 0,
             pid == header_.pid && !header_.command.empty() ? header_.command : "process " + std::to_string(pid));
  metadata("thread_name", pid, tid, "thread " + std::to_string(tid));
}

void ChromeTraceWriter::note_time(uint64_t ns) { latest_ns_ = std::max(latest_ns_, ns); }

void ChromeTraceWriter::ts_value(uint64_t ns) {
  append_us(line_, static_cast<int64_t>(ns - header_.base_ns));
}

void ChromeTraceWriter::open_event(std::string_view ph, std::string_view cat, std::string_view name,
                                   uint64_t pid, uint64_t tid, uint64_t ts) {
  line_ = events_ ? ",\n  {\"ph\": \"" : "\n  {\"ph\": \"";
  line_ += ph;
  line_ += "\", \"cat\": \"";
  line_ += cat;
  line_ += "\", \"name\": \"";
  append_json_escaped(line_, name);
  line_ += "\", \"pid\": ";
  append_uint(line_, pid);
  line_ += ", \"tid\": ";
  append_uint(line_, tid);
  line_ += ", \"ts\": ";
  ts_value(ts);
  args_open_ = false;
}

void ChromeTraceWriter::duration(uint64_t start, uint64_t end) {
  line_ += ", \"dur\": ";
  append_us(line_, end > start ? static_cast<int64_t>(end - start) : 0);  // Kineto clamps too
}

void ChromeTraceWriter::arg(std::string_view key, uint64_t value) {
  line_ += args_open_ ? ", \"" : ", \"args\": {\"";
  args_open_ = true;
  line_ += key;
  line_ += "\": ";
  append_uint(line_, value);
}

void ChromeTraceWriter::arg(std::string_view key, double value) {
  line_ += args_open_ ? ", \"" : ", \"args\": {\"";
  args_open_ = true;
  line_ += key;
  line_ += "\": ";
  char buf[32];
  auto res = std::to_chars(buf, buf + sizeof buf, std::isfinite(value) ? value : 0.0,
                           std::chars_format::fixed, 3);
  line_.append(buf, res.ptr);
}

void ChromeTraceWriter::arg(std::string_view key, std::string_view value) {
  line_ += args_open_ ? ", \"" : ", \"args\": {\"";
  args_open_ = true;
  line_ += key;
  line_ += "\": \"";
  append_json_escaped(line_, value);
  line_ += '"';
}

void ChromeTraceWriter::arg3(std::string_view key, const int32_t v[3]) {
  line_ += args_open_ ? ", \"" : ", \"args\": {\"";
  args_open_ = true;
  line_ += key;
  line_ += "\": [" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + ", " + std::to_string(v[2]) + "]";
}

void ChromeTraceWriter::close_event() {
  line_ += args_open_ ? "}}" : "}";
  sink_.write_event(line_);
  ++events_;
}

uint64_t ChromeTraceWriter::external_id(uint32_t correlation) const {
  auto it = external_.find(correlation);
  return it == external_.end() ? 0 : it->second;
}

const DeviceRecord* ChromeTraceWriter::device(uint32_t id) const {
  for (const DeviceRecord& d : header_.devices)
    if (d.id == static_cast<int>(id)) return &d;
  return nullptr;
}

template <class Map>
void ChromeTraceWriter::bound(Map& map) {
  if (map.size() < max_pending_) return;
  map.erase(map.begin());  // arbitrary victim: a join lost is better than unbounded memory
  ++evicted_;
}

void ChromeTraceWriter::add(const Record& r) {
  switch (r.kind) {
    case RecordKind::Kernel:
    case RecordKind::Memcpy:
    case RecordKind::Memset: gpu_op(r); break;
    case RecordKind::Runtime:
    case RecordKind::Driver: api_call(r); break;
    case RecordKind::Sync: sync(r); break;
    case RecordKind::Overhead: overhead(r); break;
    case RecordKind::RangeStart:
      bound(open_ranges_);
      open_ranges_[r.range_id] = OpenRange{r.start, r.pid, r.tid, std::string(r.name), std::string(r.domain)};
      note_time(r.start);
      break;
    case RecordKind::RangeEnd: range_end(r); break;
    case RecordKind::Mark: mark(r); break;
    case RecordKind::ExternalCorrelation:
      bound(external_);
      external_[r.correlation] = r.external_id;
      break;
  }
}

void ChromeTraceWriter::gpu_op(const Record& r) {
  note_time(r.end);
  context_device_[r.context] = r.device;
  gpu_row(r.device, r.stream);
  std::string name;
  std::string_view cat;
  if (r.kind == RecordKind::Kernel) {
    cat = "kernel";
    name = r.name;
  } else if (r.kind == RecordKind::Memcpy) {
    cat = "gpu_memcpy";
    name = "Memcpy ";
    name += memcpy_kind_name(r.sub_kind);
    name += " (";
    name += memory_kind_name(r.src_kind);
    name += " -> ";
    name += memory_kind_name(r.dst_kind);
    name += ")";
  } else {
    cat = "gpu_memset";
    name = "Memset (";
    name += memory_kind_name(r.src_kind);
    name += ")";
  }
  open_event("X", cat, name, r.device, r.stream, r.start);
  duration(r.start, r.end);
  if (r.kind == RecordKind::Kernel && r.queued != 0) arg("queued", r.queued > r.start ? 0 : r.start - r.queued);
  arg("device", uint64_t{r.device});
  arg("context", uint64_t{r.context});
  arg("stream", uint64_t{r.stream});
  arg("correlation", uint64_t{r.correlation});
  if (const uint64_t ext = external_id(r.correlation)) arg("External id", ext);
  if (r.kind == RecordKind::Kernel) {
    arg("registers per thread", uint64_t{r.registers});
    arg("shared memory", uint64_t{r.static_smem} + r.dynamic_smem);
    if (const DeviceRecord* d = device(r.device); d != nullptr && d->num_sms > 0 && d->warp_size > 0) {
      const double blocks = double(r.grid[0]) * r.grid[1] * r.grid[2];
      const double threads = double(r.block[0]) * r.block[1] * r.block[2];
      const double blocks_per_sm = blocks / d->num_sms;
      arg("blocks per SM", blocks_per_sm);
      arg("warps per SM", blocks_per_sm * std::ceil(threads / d->warp_size));
    }
    arg3("grid", r.grid);
    arg3("block", r.block);
  } else {
    arg("bytes", r.bytes);
    if (r.end > r.start) arg("memory bandwidth (GB/s)", double(r.bytes) / double(r.end - r.start));
  }
  close_event();
  const GpuSide gpu{r.start, r.device, r.stream};
  link_flow(r.correlation, nullptr, &gpu);
  if (r.kind != RecordKind::Kernel || header_.metrics.empty() || r.correlation == 0) return;
  KernelSide kernel{r.start, r.end, r.device, r.stream, std::string(r.name)};
  if (auto it = counters_waiting_.find(r.correlation); it != counters_waiting_.end()) {
    profiler_range(r.correlation, kernel, it->second.values.data());
    counters_waiting_.erase(it);
    return;
  }
  if (recent_kernels_.size() < kRecentKernels) recent_kernels_.emplace_back(r.correlation, std::move(kernel));
  else recent_kernels_[recent_next_] = {r.correlation, std::move(kernel)};
  recent_next_ = (recent_next_ + 1) % kRecentKernels;
}

void ChromeTraceWriter::add_counters(const KernelCounters& k) {
  for (auto& [correlation, kernel] : recent_kernels_)
    if (correlation == k.correlation && k.correlation != 0) {
      profiler_range(k.correlation, kernel, k.values);
      correlation = 0;  // one range per launch
      return;
    }
  bound(counters_waiting_);
  counters_waiting_[k.correlation] = CountersWaiting{k.device, k.launched, std::string(k.kernel),
                                                     std::vector<double>(k.values, k.values + header_.metrics.size())};
}

// As Kineto writes them (numeric args keyed by metric name), on the kernel's row and time,
// with the correlation id that ties the range to its launch.
void ChromeTraceWriter::profiler_range(uint32_t correlation, const KernelSide& kernel, const double* values) {
  gpu_row(kernel.device, kernel.stream);
  open_event("X", "cuda_profiler_range", kernel.name, kernel.device, kernel.stream, kernel.start);
  duration(kernel.start, kernel.end);
  for (size_t i = 0; i < header_.metrics.size(); ++i) arg(header_.metrics[i], values[i]);
  arg("correlation", uint64_t{correlation});
  close_event();
  ++profiled_ranges_;
}

void ChromeTraceWriter::api_call(const Record& r) {
  note_time(r.end);
  cpu_row(r.pid, r.tid);
  open_event("X", r.kind == RecordKind::Runtime ? "cuda_runtime" : "cuda_driver", r.name, r.pid, r.tid,
             r.start);
  duration(r.start, r.end);
  arg("cbid", uint64_t{r.cbid});
  arg("correlation", uint64_t{r.correlation});
  if (const uint64_t ext = external_id(r.correlation)) arg("External id", ext);
  close_event();
  const CpuSide cpu{r.start, r.pid, r.tid};
  link_flow(r.correlation, &cpu, nullptr);
}

void ChromeTraceWriter::link_flow(uint32_t correlation, const CpuSide* cpu, const GpuSide* gpu) {
  if (correlation == 0) return;
  if (cpu != nullptr) {
    if (auto it = gpu_waiting_.find(correlation); it != gpu_waiting_.end()) {
      flow_pair(correlation, *cpu, it->second);
      gpu_waiting_.erase(it);
    } else {
      bound(api_waiting_);
      api_waiting_[correlation] = *cpu;
    }
    return;
  }
  if (auto it = api_waiting_.find(correlation); it != api_waiting_.end()) {
    flow_pair(correlation, it->second, *gpu);
    api_waiting_.erase(it);  // one arrow per launch, as Kineto draws them
  } else {
    bound(gpu_waiting_);
    gpu_waiting_[correlation] = *gpu;
  }
}

void ChromeTraceWriter::flow_pair(uint32_t correlation, const CpuSide& cpu, const GpuSide& gpu) {
  open_event("s", "ac2g", "ac2g", cpu.pid, cpu.tid, cpu.ts);
  line_ += ", \"id\": ";
  append_uint(line_, correlation);
  close_event();
  open_event("f", "ac2g", "ac2g", gpu.device, gpu.stream, gpu.ts);
  line_ += ", \"id\": ";
  append_uint(line_, correlation);
  line_ += ", \"bp\": \"e\"";
  close_event();
}

void ChromeTraceWriter::sync(const Record& r) {
  note_time(r.end);
  auto dev = context_device_.find(r.context);
  const uint32_t device_id = dev == context_device_.end() ? 0 : dev->second;
  const uint32_t row = r.stream == kInvalidStream ? 0 : r.stream;
  gpu_row(device_id, row);
  open_event("X", "cuda_sync", sync_name(r.sub_kind), device_id, row, r.start);
  duration(r.start, r.end);
  arg("device", uint64_t{device_id});
  if (r.stream != kInvalidStream) arg("stream", uint64_t{r.stream});
  arg("correlation", uint64_t{r.correlation});
  close_event();
}

void ChromeTraceWriter::overhead(const Record& r) {
  note_time(r.end);
  if (r.pid != 0) cpu_row(r.pid, r.tid);
  open_event("X", "overhead", r.name, r.pid != 0 ? r.pid : r.device, r.tid, r.start);
  duration(r.start, r.end);
  close_event();
}

void ChromeTraceWriter::add_open_range(uint64_t start, uint32_t pid, uint32_t tid, std::string name) {
  orphan_starts_[{pid, tid}] = OpenRange{start, pid, tid, std::move(name), {}};
}

void ChromeTraceWriter::range_end(const Record& r) {
  note_time(r.end);
  auto it = open_ranges_.find(r.range_id);
  OpenRange o;
  if (it != open_ranges_.end()) {
    o = std::move(it->second);
    open_ranges_.erase(it);
  } else if (auto orphan = orphan_starts_.find({r.pid, r.tid}); orphan != orphan_starts_.end()) {
    o = std::move(orphan->second);
    orphan_starts_.erase(orphan);
  } else {
    return;  // started before recording: nothing to pair
  }
  cpu_row(o.pid, o.tid);
  open_event("X", "user_annotation", o.name, o.pid, o.tid, o.start);
  duration(o.start, r.end);
  if (!o.domain.empty()) arg("domain", std::string_view(o.domain));
  close_event();
}

void ChromeTraceWriter::mark(const Record& r) {
  note_time(r.start);
  cpu_row(r.pid, r.tid);
  open_event("i", "user_annotation", r.name, r.pid, r.tid, r.start);
  line_ += ", \"s\": \"t\"";
  if (!r.domain.empty()) arg("domain", r.domain);
  close_event();
}

void ChromeTraceWriter::finish(const TraceStats& stats) {
  uint64_t unmatched = 0;
  auto close_unfinished = [&](const OpenRange& o) {
    cpu_row(o.pid, o.tid);
    open_event("X", "user_annotation", o.name, o.pid, o.tid, o.start);
    duration(o.start, std::max(o.start, latest_ns_));
    arg("unfinished", uint64_t{1});
    close_event();
    ++unmatched;
  };
  // Counters whose kernel never came (its record dropped, or kernels not recorded): at the
  // launch's time on the device's row 0, where Kineto puts every range.
  for (auto& [correlation, w] : counters_waiting_)
    profiler_range(correlation, KernelSide{w.launched, w.launched, w.device, 0, std::move(w.kernel)}, w.values.data());
  counters_waiting_.clear();
  for (const auto& [id, o] : open_ranges_) close_unfinished(o);
  for (const auto& [thread, o] : orphan_starts_) close_unfinished(o);
  open_ranges_.clear();
  orphan_starts_.clear();
  std::string& s = line_;
  s = "\n  ],\n  \"collector\": {\"name\": \"strata\", \"records\": " + std::to_string(stats.records) +
      ", \"droppedRecords\": " + std::to_string(stats.dropped) +
      ", \"unmatchedRanges\": " + std::to_string(unmatched) +
      ", \"evictedJoins\": " + std::to_string(evicted_);
  if (!header_.metrics.empty()) s += ", \"profiledKernels\": " + std::to_string(profiled_ranges_);
  if (!notes_.empty()) {
    s += ", \"notes\": [";
    for (size_t i = 0; i < notes_.size(); ++i) {
      s += i ? ", \"" : "\"";
      append_json_escaped(s, notes_[i]);
      s += '"';
    }
    s += ']';
  }
  s += "},\n  \"traceName\": \"";
  append_json_escaped(s, header_.trace_name);
  s += "\"\n}\n";
  sink_.write(s);
  sink_.flush();
}

}  // namespace strata::collector
