#include "core/trace_model.h"

#include "core/json_scan.h"

#include <algorithm>
#include <charconv>

namespace strata {

const char* cat_name(Cat c) {
  switch (c) {
    case Cat::Other: return "other";
    case Cat::CpuOp: return "cpu_op";
    case Cat::UserAnnotation: return "user_annotation";
    case Cat::GpuUserAnnotation: return "gpu_user_annotation";
    case Cat::CudaRuntime: return "cuda_runtime";
    case Cat::CudaDriver: return "cuda_driver";
    case Cat::Kernel: return "kernel";
    case Cat::GpuMemcpy: return "gpu_memcpy";
    case Cat::GpuMemset: return "gpu_memset";
    case Cat::CudaSync: return "cuda_sync";
    case Cat::CudaEvent: return "cuda_event";
    case Cat::PythonFunction: return "python_function";
    case Cat::CpuInstant: return "cpu_instant_event";
    case Cat::Trace: return "Trace";
    case Cat::Overhead: return "overhead";
    case Cat::None: return "(none)";
    case Cat::ProfilerRange: return "cuda_profiler_range";
    case Cat::Count: break;
  }
  return "?";
}

Cat device_category_kind(std::string_view s) {
  // Kineto's device activity types (libkineto's ActivityType names) and Cambricon's `mlu_*`.
  struct Spelling { std::string_view name; Cat kind; };
  static constexpr Spelling kinds[] = {
      {"mtia_runtime", Cat::CudaRuntime},        {"glow_runtime", Cat::CudaRuntime},
      {"xpu_runtime", Cat::CudaRuntime},         {"privateuse1_runtime", Cat::CudaRuntime},
      {"mlu_runtime", Cat::CudaRuntime},         {"xpu_driver", Cat::CudaDriver},
      {"privateuse1_driver", Cat::CudaDriver},   {"mlu_driver", Cat::CudaDriver},
      {"xpu_sync", Cat::CudaSync},               {"mtia_ccp_events", Cat::Kernel},
      {"hpu_op", Cat::Kernel},                   {"mlu_kernel", Cat::Kernel},
      {"mlu_memcpy", Cat::GpuMemcpy},            {"mlu_memset", Cat::GpuMemset},
      {"mlu_user_annotation", Cat::GpuUserAnnotation},
      // torch_npu's task queue: an op hands its launch to the queue's thread (`enqueue`, the
      // launch as the op's thread makes it); that thread's `dequeue` span stays Other.
      {"enqueue", Cat::CudaRuntime},
  };
  for (const Spelling& k : kinds)
    if (k.name == s) return k.kind;
  return Cat::Other;
}

std::vector<Cat> category_kinds(const std::vector<std::string>& names) {
  std::vector<Cat> kinds(names.size());
  for (size_t i = 0; i < names.size(); ++i) kinds[i] = i < size_t(Cat::Count) ? Cat(i) : device_category_kind(names[i]);
  return kinds;
}

int64_t device_number_of_label(std::string_view labels) {
  // "<device> <n>": a word of capitals (GPU, MTIA, XPU, HPU, MLU, NPU) and the number.
  size_t w = 0;
  while (w < labels.size() && labels[w] >= 'A' && labels[w] <= 'Z') ++w;
  if (w == 0 || labels.substr(0, w) == "CPU") return -1;
  std::string_view rest = labels.substr(w);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  int64_t v = -1;
  auto r = std::from_chars(rest.data(), rest.data() + rest.size(), v);
  return r.ec == std::errc() && v >= 0 ? v : -1;
}

std::string_view device_word_of_label(std::string_view labels) {
  // The whole label is the word, or the word and a number (as device_number_of_label reads it).
  size_t w = 0;
  while (w < labels.size() && labels[w] >= 'A' && labels[w] <= 'Z') ++w;
  std::string_view word = labels.substr(0, w);
  if (w < 2 || word == "CPU") return {};
  return w == labels.size() || device_number_of_label(labels) >= 0 ? word : std::string_view();
}

namespace {

bool ascii_iequal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = char(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = char(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

bool is_alnum(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

}  // namespace

Cat device_task_kind(std::string_view n) {
  // Words: runs of letters and digits between other characters (`_`, `-`, spaces).
  for (size_t i = 0; i < n.size();) {
    while (i < n.size() && !is_alnum(n[i])) ++i;
    size_t j = i;
    while (j < n.size() && is_alnum(n[j])) ++j;
    std::string_view word = n.substr(i, j - i);
    if (ascii_iequal(word, "memcpy")) return Cat::GpuMemcpy;
    if (ascii_iequal(word, "memset")) return Cat::GpuMemset;
    i = j;
  }
  return Cat::Kernel;
}

bool is_runtime_api_call_name(std::string_view n) {
  // The API layers whose calls are the runtime's: Ascend's ACL (`AscendCL@`).
  static constexpr std::string_view apis[] = {"AscendCL@"};
  for (std::string_view a : apis)
    if (n.size() > a.size() && n.starts_with(a)) return true;
  return false;
}

bool TraceModel::is_blocking_copy(EventId call) const {
  constexpr Ns kClockTolerance = 2'000;  // host and GPU clocks disagree by this much
  const EventId op = gpu_op_of(call);
  return op != kNoEvent && ev.category(op) == Cat::GpuMemcpy && name_of(call).find("Memcpy") != std::string_view::npos &&
         ev.start[op] + kClockTolerance < ev.end(call);
}

bool is_legacy_op_name(std::string_view n) {
  if (n.find("::") != std::string_view::npos) return true;
  // "gloo:send": a lower-case namespace and a colon.
  if (size_t c = n.find(':'); c != std::string_view::npos && c > 0) {
    bool ns = true;
    for (size_t i = 0; i < c && ns; ++i) ns = (n[i] >= 'a' && n[i] <= 'z') || (n[i] >= '0' && n[i] <= '9') || n[i] == '_';
    if (ns && c + 1 < n.size() && n[c + 1] != ' ') return true;
  }
  size_t end = n.size();
  while (end > 0 && n[end - 1] >= '0' && n[end - 1] <= '9') --end;
  if (n.substr(0, end).ends_with("Backward") && end > 8) return true;
  return n == "detach" || n == "detach_";
}

bool is_gpu_cat(Cat c) {
  return c == Cat::Kernel || c == Cat::GpuMemcpy || c == Cat::GpuMemset || c == Cat::GpuUserAnnotation ||
         c == Cat::ProfilerRange;
}

void TraceModel::shift_clock(Ns offset) {
  if (offset == 0) return;
  for (Ns& s : ev.start) s += offset;
  for (Ns& s : memory.ts) s += offset;
  for (CounterSeries& c : counters)
    for (Ns& s : c.ts) s += offset;
  time_begin += offset;
  time_end += offset;
}

HostWait host_wait_of(std::string_view n) {
  if (size_t at = n.rfind('@'); at != std::string_view::npos) n.remove_prefix(at + 1);
  // After the API's own lower-case prefix (cuda, cu, hip, aclrt): the call.
  size_t p = 0;
  while (p < n.size() && n[p] >= 'a' && n[p] <= 'z') ++p;
  if (p == 0) return HostWait::None;
  std::string_view call = n.substr(p);
  if (call.ends_with("WithTimeout")) call.remove_suffix(std::string_view("WithTimeout").size());
  if (call == "DeviceSynchronize" || call == "CtxSynchronize" || call == "SynchronizeDevice") return HostWait::Device;
  if (call == "StreamSynchronize" || call == "SynchronizeStream") return HostWait::Stream;
  if (call == "EventSynchronize" || call == "SynchronizeEvent") return HostWait::Event;
  if (call == "Memcpy") return HostWait::Copy;
  if (call == "StreamWaitEvent") return HostWait::StreamWaitEvent;
  return HostWait::None;
}

int64_t profiler_step_number(std::string_view n) {
  if (!is_profiler_step_name(n)) return -1;
  n.remove_prefix(kProfilerStepPrefix.size());
  int64_t v = 0;
  auto r = std::from_chars(n.data(), n.data() + n.size(), v);
  return r.ec == std::errc() && v >= 0 ? v : -1;
}

template <class T>
static size_t cap(const std::vector<T>& v) {
  return v.capacity() * sizeof(T);
}

size_t EventColumns::bytes() const {
  return cap(start) + cap(dur) + cap(name) + cap(cat) + cap(kinds) + cap(phase) + cap(depth) + cap(id) + cap(source_offset) +
         cap(link);
}

size_t MemoryEvents::bytes_used() const {
  return cap(ts) + cap(bytes) + cap(total_allocated) + cap(total_reserved) + cap(addr) + cap(device_type) +
         cap(device_id) + cap(track);
}

size_t TraceModel::bytes() const {
  size_t b = ev.bytes() + memory.bytes_used() + strings.bytes();
  for (const Track& t : tracks) b += sizeof(Track) + cap(t.levels);
  b += cap(processes);
  for (const CounterSeries& s : counters) b += sizeof(s) + cap(s.ts) + cap(s.value);
  // Hash map nodes: key, value, next pointer and the bucket slot.
  b += (fwd_to_bwd.size() + bwd_to_fwd.size()) * 32 + (fwd_to_bwd.bucket_count() + bwd_to_fwd.bucket_count()) * 8;
  return b;
}

uint32_t TraceModel::track_of(EventId e) const {
  auto it = std::upper_bound(tracks.begin(), tracks.end(), e,
                             [](EventId x, const Track& t) { return x < t.events.begin; });
  // Tracks are laid out in index order, so the last one starting at or before e holds it,
  // skipping empty tracks that start at the same place.
  while (it != tracks.begin()) {
    --it;
    if (e >= it->events.begin && e < it->events.end) return uint32_t(it - tracks.begin());
    if (it->events.begin < e) break;
  }
  return kNoTrack;
}

EventId TraceModel::parent_of(EventId e) const {
  uint16_t d = ev.depth[e];
  if (d == 0) return kNoEvent;
  uint32_t t = track_of(e);
  if (t == kNoTrack) return kNoEvent;
  const IndexRange& level = tracks[t].levels[d - 1];
  auto b = ev.start.begin() + level.begin, en = ev.start.begin() + level.end;
  auto it = std::upper_bound(b, en, ev.start[e]);
  if (it == b) return kNoEvent;
  return EventId(it - ev.start.begin() - 1);
}

EventId TraceModel::event_at(uint32_t track, Ns t) const {
  const Track& tr = tracks[track];
  for (size_t d = tr.levels.size(); d-- > 0;) {
    const IndexRange& level = tr.levels[d];
    auto b = ev.start.begin() + level.begin, en = ev.start.begin() + level.end;
    auto it = std::upper_bound(b, en, t);
    if (it == b) continue;
    auto id = EventId(it - ev.start.begin() - 1);
    if (ev.end(id) >= t) return id;
  }
  return kNoEvent;
}

const EventArgs& TraceModel::args() const {
  static const NoEventArgs none;
  return event_args ? *event_args : none;
}

std::string_view TraceModel::source_of(EventId e) const {
  if (!source || e >= ev.size()) return {};
  uint64_t off = ev.source_offset[e];
  const char* p = source->data();
  size_t n = source->size();
  if (off >= n || p[off] != '{') return {};
  size_t end;
  if (json::value_end(p, off, n, end) != json::ScanError::None) return {};
  return {p + off, end - off};
}

}  // namespace strata
