// The in-memory trace model: what every loader produces and every analysis and view reads.
//
// Events are stored column-wise, sorted by (track, depth, start), so each nesting level of
// each track is one contiguous, non-overlapping, start-sorted range: the visible part of a
// level is two binary searches away. Only the arguments analyses need are columns; the
// rest is read on demand from the event's bytes in the source (see `source_offset`).
#pragma once

#include "core/event_args.h"
#include "core/source.h"
#include "core/strings.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace strata {

inline constexpr EventId kNoEvent = UINT32_MAX;
inline constexpr uint32_t kNoTrack = UINT32_MAX;

// Event categories the analyses know. Older spellings (2021 TensorBoard plugin's
// `Operator`/`Runtime`/`Kernel`/…) map to the same values; anything else keeps its spelling
// in `TraceModel::category_names`, and its kind (EventColumns::kinds) is what analyses see:
// other devices' categories (`mtia_runtime`, `xpu_driver`, `mtia_ccp_events`, …) are the
// runtime, driver, kernel, copy kinds; the rest is `Other`.
enum class Cat : uint8_t {
  Other = 0,
  CpuOp,
  UserAnnotation,
  GpuUserAnnotation,
  CudaRuntime,
  CudaDriver,
  Kernel,
  GpuMemcpy,
  GpuMemset,
  CudaSync,
  CudaEvent,
  PythonFunction,
  CpuInstant,
  Trace,
  Overhead,
  None,  // the event had no `cat` (legacy autograd profiler, metadata)
  // `cuda_profiler_range`: one kernel as CUPTI's range profiler saw it, with hardware counters
  // in its args. Its time is made up (Kineto splits the profiled span evenly among ranges), so
  // it is device work that timing analyses (busy, idle gaps, GPU time) leave out.
  ProfilerRange,
  Count
};
const char* cat_name(Cat c);
// The kind of a category spelling that is not a Cat name: another device's runtime, driver,
// kernels, copies (Kineto's `mtia_*`, `xpu_*`, `privateuse1_*`, `mlu_*`, `hpu_op`, …), else Other.
Cat device_category_kind(std::string_view spelling);
// Runs on a device stream: kernel, memcpy, memset, gpu_user_annotation, a profiler range.
bool is_gpu_cat(Cat c);
// GPU work: kernels, copies and sets (a gpu_user_annotation is a range over work, not work;
// a profiler range has no measured time).
inline bool is_gpu_op_cat(Cat c) { return c == Cat::Kernel || c == Cat::GpuMemcpy || c == Cat::GpuMemset; }
// A launch: a CUDA runtime or driver call, the host side of a GPU op.
inline bool is_launch_cat(Cat c) { return c == Cat::CudaRuntime || c == Cat::CudaDriver; }
// A call into CUDA from the host: a runtime or driver call, or a synchronization record.
inline bool is_cuda_call_cat(Cat c) { return is_launch_cat(c) || c == Cat::CudaSync; }
// Events whose `id` column holds the CUDA correlation id (GPU side and CUDA calls).
inline bool carries_correlation(Cat c) { return is_gpu_cat(c) || is_cuda_call_cat(c); }

// What a device runtime call (CUDA, HIP, Ascend's ACL) waits for, by its name: the whole
// device, one stream, one event, its own synchronous copy, or (cudaStreamWaitEvent) nothing on
// the host: it makes a stream wait for an event. Names are read after any `layer@` prefix
// (`AscendCL@aclrtSynchronizeStream`); `<Thing>Synchronize` (CUDA's order) and
// `Synchronize<Thing>` (ACL's, with or without `WithTimeout`) both count.
enum class HostWait : uint8_t { None, Device, Stream, Event, Copy, StreamWaitEvent };
HostWait host_wait_of(std::string_view call_name);

// Events that a trace writes without a category but whose place says what they are (torch_npu:
// the "Ascend Hardware" process's tasks, the "CANN" process's API calls). The kind of an
// uncategorised task on a device's stream, by its name: a copy or a set where a word of the
// name says so (`MEMCPY_ASYNC`, `trans_TransData_3_MemSet`), else a kernel.
Cat device_task_kind(std::string_view task_name);
// A host call into a device runtime's API, written `<API>@<call>` (`AscendCL@aclnnAdd`): it is
// the category Kineto writes for such a backend's runtime calls (kPrivateUse1Runtime).
bool is_runtime_api_call_name(std::string_view name);
// An operator's name as the legacy autograd profiler writes it, which gives events no category:
// namespaced ("aten::add", "c10d::send", "gloo:recv", "autograd::engine::evaluate_function: …"),
// an autograd node ("AddmmBackward0") or one of the few bare ones ("detach_"). Its other
// events are record_function ranges ("forward", "ProfilerStep#1", "## sparse_data_dist ##").
bool is_legacy_op_name(std::string_view name);
inline constexpr std::string_view kPrivateUse1Runtime = "privateuse1_runtime";

// ProfilerStep: the range torch.profiler writes around each step of its schedule,
// "ProfilerStep#N" (a user_annotation; a cpu_op in older traces, no category in the legacy
// autograd profiler).
inline constexpr std::string_view kProfilerStepPrefix = "ProfilerStep#";
inline bool is_profiler_step_name(std::string_view n) { return n.starts_with(kProfilerStepPrefix); }
// N of "ProfilerStep#N", or -1.
int64_t profiler_step_number(std::string_view n);

enum class EventPhase : uint8_t { Complete, Instant, Counter, FlowStart, FlowStep, FlowEnd, Metadata, Begin, End, Other };

struct IndexRange {
  uint32_t begin = 0, end = 0;
  uint32_t size() const { return end - begin; }
  bool empty() const { return begin == end; }
};

enum class TrackKind : uint8_t { CpuThread, GpuStream, Other };
// A thread id as a person reads it: ids written as signed 32-bit numbers (Kineto writes some
// pthread ids so) are the unsigned ids they stand for.
inline int64_t shown_thread_id(int64_t tid) { return tid < 0 && tid >= INT32_MIN ? int64_t(uint32_t(tid)) : tid; }

struct Track {
  TrackKind kind = TrackKind::Other;
  uint32_t process = 0;        // index into TraceModel::processes
  int64_t tid = 0;             // numeric thread / stream id (a string tid is parsed or hashed)
  StrId tid_label = kNoStr;    // the tid as written when it was a string ("stream 7")
  StrId name = kNoStr;         // thread_name metadata, else a made-up one
  int64_t stream = -1;         // GPU streams: the CUDA stream id
  int64_t sort_index = 0;
  IndexRange events;                // all events of this track
  std::vector<IndexRange> levels;   // levels[d]: events at nesting depth d
  uint32_t overflow = kNoTrack;     // events that overlapped here without nesting live there
  uint32_t overflow_of = kNoTrack;  // this track holds such events of that track
};

struct Process {
  int64_t pid = 0;
  StrId pid_label = kNoStr;  // the pid as written when it was a string ("Spans")
  StrId name = kNoStr;       // process_name metadata
  StrId labels = kNoStr;     // process_labels metadata ("GPU 0", "CPU")
  int64_t sort_index = 0;
  int32_t device = -1;       // GPU index when this process row is a GPU
};

// Event columns; all have the same length. `link` pairs a CPU launch (runtime/driver call)
// with the GPU op it launched, in both directions (resolved from `correlation` and ac2g-style
// flows; a launch keeps its earliest GPU op), a gpu_user_annotation with its user_annotation,
// and points a python_function frame at its parent frame (`Python parent id`). Read it
// through TraceModel's accessors (gpu_op_of, launch_of, …), which say which meaning applies.
struct EventColumns {
  std::vector<Ns> start;
  std::vector<Ns> dur;
  std::vector<StrId> name;
  std::vector<uint8_t> cat;        // index into TraceModel::category_names; Cat values first
  std::vector<Cat> kinds;          // by category index: the kind analyses see (category_kinds)
  std::vector<EventPhase> phase;
  std::vector<uint16_t> depth;
  std::vector<int64_t> id;         // correlation (launches, GPU ops) or External id (the rest), -1 if none
  std::vector<uint64_t> source_offset;  // byte offset of the event's `{` in the (decompressed) source
  std::vector<EventId> link;

  size_t size() const { return start.size(); }
  Ns end(EventId e) const { return start[e] + dur[e]; }
  Cat category(EventId e) const {
    uint8_t c = cat[e];
    return c < kinds.size() ? kinds[c] : c < uint8_t(Cat::Count) ? Cat(c) : Cat::Other;
  }
  size_t bytes() const;
};

// `[memory]` allocator events (profile_memory), by time.
struct MemoryEvents {
  std::vector<Ns> ts;
  std::vector<int64_t> bytes;  // negative = free
  std::vector<int64_t> total_allocated;
  std::vector<int64_t> total_reserved;  // 0 where the trace records none
  std::vector<uint64_t> addr;           // 0 where the trace records none
  std::vector<int8_t> device_type;  // 0 CPU, 1 CUDA (as PyTorch writes it)
  std::vector<int16_t> device_id;
  std::vector<uint32_t> track;
  // What the trace itself recorded. Where an event has no "Total Allocated" (the 2021 format
  // writes only Bytes), its device's total is the running sum of Bytes, raised so that it
  // never falls below zero: frees of memory allocated before the trace began are what it
  // held then, at least.
  bool totals_derived = false;
  bool reserved_recorded = false;
  bool addresses_recorded = false;
  size_t size() const { return ts.size(); }
  size_t bytes_used() const;
};

// Counter (`ph: C`) samples: one series per (process, name, arg key).
struct CounterSeries {
  uint32_t process = 0;
  StrId name = kNoStr;
  std::vector<Ns> ts;
  std::vector<double> value;
};

struct DeviceInfo {
  int64_t id = -1;
  std::string name;
  int64_t total_global_mem = 0;
  int64_t compute_major = 0, compute_minor = 0;
  int64_t num_sms = 0;
};

struct DistributedInfo {
  std::string backend;
  int64_t rank = -1;
  int64_t world_size = -1;
};

struct LoadStats {
  std::string_view importer;   // the importer that read it (import/importer.h): "kineto", …
  uint64_t file_bytes = 0;     // as stored (compressed when .gz)
  uint64_t json_bytes = 0;     // decompressed JSON
  uint64_t trace_events = 0;   // entries of traceEvents
  uint64_t per_phase[size_t(EventPhase::Other) + 1] = {};
  std::vector<uint64_t> per_category;  // by index into category_names (events of every phase)
  uint64_t flows_total = 0, flows_resolved = 0;   // flow pairs (s with its f)
  uint64_t flow_events_unmatched = 0;             // s or f without a partner, or binding to no slice
  uint64_t launches_linked = 0, gpu_ops = 0, gpu_ops_linked = 0;
  uint64_t fwdbwd_pairs = 0;
  uint64_t overlaps = 0;       // X events that overlapped without nesting (kept on overflow tracks)
  uint64_t rounding_clips = 0; // events nested in their parent by cutting an end that overran it by the
                               // trace's rounding (the legacy format's whole microseconds)
  double seconds_read = 0, seconds_parse = 0, seconds_build = 0, seconds_total = 0;
  size_t model_bytes = 0;
  int64_t peak_rss_bytes = 0;
};

// The kind of each category spelling (index = category index): Cat names are themselves,
// the rest device_category_kind.
std::vector<Cat> category_kinds(const std::vector<std::string>& names);
// The device number a process label names ("GPU 0", "MTIA 9", "XPU 1"), or -1 ("CPU", "NPU", none).
int64_t device_number_of_label(std::string_view labels);
// The accelerator a process label names, with or without its number: "GPU" of "GPU 0", "NPU"
// of "NPU"; empty for "CPU", none, or anything else.
std::string_view device_word_of_label(std::string_view labels);

struct TraceModel {
  std::string path;
  std::shared_ptr<const SourceBuffer> source;  // the decompressed JSON, for lazy reads

  StringTable strings;
  std::vector<std::string> category_names;  // index = EventColumns::cat
  EventColumns ev;
  std::vector<Track> tracks;
  std::vector<Process> processes;
  MemoryEvents memory;
  std::vector<CounterSeries> counters;

  // Forward op ↔ its backward op (fwdbwd flows, or Sequence number + Fwd thread id).
  std::unordered_map<EventId, EventId> fwd_to_bwd, bwd_to_fwd;

  std::vector<DeviceInfo> devices;
  DistributedInfo distributed;
  std::string schema_version, trace_name, display_time_unit;
  int64_t base_time_ns = 0;
  Ns time_begin = 0, time_end = 0;  // over all timed events

  // The events' arguments analyses read (set by the importer); args() is never null.
  std::unique_ptr<const EventArgs> event_args;
  const EventArgs& args() const;

  uint64_t warning_count = 0;
  std::vector<std::string> warnings;  // the first few, each naming the event and byte offset
  LoadStats stats;

  uint32_t track_of(EventId e) const;  // binary search over track ranges
  std::string_view name_of(EventId e) const { return strings.view(ev.name[e]); }

  // What `ev.link` holds, by the event's category (kNoEvent where that meaning does not apply).
  EventId gpu_op_of(EventId launch) const { return is_launch_cat(ev.category(launch)) ? ev.link[launch] : kNoEvent; }
  EventId launch_of(EventId gpu_op) const { return is_gpu_op_cat(ev.category(gpu_op)) ? ev.link[gpu_op] : kNoEvent; }
  // A gpu_user_annotation's user_annotation and back.
  EventId paired_annotation_of(EventId e) const {
    Cat c = ev.category(e);
    return c == Cat::UserAnnotation || c == Cat::GpuUserAnnotation ? ev.link[e] : kNoEvent;
  }
  EventId python_parent_of(EventId frame) const {
    return ev.category(frame) == Cat::PythonFunction ? ev.link[frame] : kNoEvent;
  }
  // The host event a GPU-side event came from: a GPU op's launch, a GPU range's CPU range.
  EventId host_side_of(EventId gpu_event) const {
    return is_gpu_cat(ev.category(gpu_event)) ? ev.link[gpu_event] : kNoEvent;
  }
  // What `ev.id` holds: on the GPU side (GPU ops and ranges, CUDA calls) the CUDA correlation
  // id (the parser falls back to the External id when an event has none); elsewhere the
  // External id. -1 when absent or not of that kind.
  int64_t correlation_of(EventId e) const { return carries_correlation(ev.category(e)) ? ev.id[e] : -1; }
  int64_t external_id_of(EventId e) const { return carries_correlation(ev.category(e)) ? -1 : ev.id[e]; }
  // A ProfilerStep#N range on a CPU thread.
  bool is_profiler_step(EventId e) const {
    Cat c = ev.category(e);
    return (c == Cat::UserAnnotation || c == Cat::CpuOp || c == Cat::None) && is_profiler_step_name(name_of(e));
  }
  // A copy call that returned only once its copy ran (pageable host memory, a staged copy): it
  // waits for the GPU like a synchronous copy, whatever its name says.
  bool is_blocking_copy(EventId call) const;
  // Enclosing event one level up on the same track, or kNoEvent.
  EventId parent_of(EventId e) const;
  // The deepest event on `track` whose [start, end] contains t, or kNoEvent.
  EventId event_at(uint32_t track, Ns t) const;
  // The source bytes of an event (its JSON object), for the details panel.
  std::string_view source_of(EventId e) const;
  // Moves every timestamp by `offset` (a rank put on its job's reference clock); the source
  // bytes keep the file's own times.
  void shift_clock(Ns offset);
  size_t bytes() const;
};

}  // namespace strata
