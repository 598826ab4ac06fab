// A stand-in for libcupti, built under the real library's SONAME, so a process that loads it
// first gets every CUPTI call of libstrata_agent.so here. It implements the part of the
// callback and activity APIs the agent uses, with the semantics documented in cupti.h,
// cupti_activity.h and cupti_callbacks.h, and drives them from simulated CUDA runtime and
// NVTX calls (sim_api.h): callbacks at API enter/exit, activity records into the client's
// buffers, a flush worker, dropped-record counts. Locks are fine here (this is not the
// agent), but no client callback is ever called with a lock held: the agent calls CUPTI
// back from its callbacks (cuptiActivityGetNumDroppedRecords, cuptiFinalize, ...).
#include <cupti.h>
#include <generated_nvtx_meta.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <thread>
#include <unordered_set>

#include "sim_api.h"
#include "sim_internal.h"

struct CUpti_Subscriber_st {
  uint64_t generation;
};

namespace {

constexpr uint32_t kContextId = 1;
constexpr uint32_t kDeviceId = 0;
constexpr uint64_t kLaunchLatencyNs = 2000;  // launch call to kernel start on an idle stream
constexpr uint64_t kKernelGapNs = 300;       // between kernels queued on one stream

// Our framing of records in a client buffer: an 8-byte header, then the CUPTI struct,
// padded to 8 bytes so every record stays 8-byte aligned.
struct RecordHeader {
  uint32_t bytes;  // header + record + padding
  uint32_t magic;
};
constexpr uint32_t kRecordMagic = 0x524d4953;  // "SIMR"
static_assert(sizeof(RecordHeader) == 8);

constexpr size_t align8(size_t n) { return (n + 7) & ~size_t{7}; }

uint64_t now_ns() {
  const auto since_epoch = std::chrono::steady_clock::now().time_since_epoch();
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(since_epoch).count());
}

struct Counters {
#define STRATA_SIM_ATOMIC(name) std::atomic<uint64_t> name{0};
  STRATA_SIM_COUNTERS(STRATA_SIM_ATOMIC)
#undef STRATA_SIM_ATOMIC
};

// A buffer on its way back to the client through its completed callback.
struct Handback {
  uint8_t* buffer = nullptr;
  size_t size = 0;
  size_t valid = 0;
  uint64_t seq = 0;
  CUpti_BuffersCallbackCompleteFunc completed = nullptr;
};

// Which callbacks of one domain the subscriber gets: the whole domain (cuptiEnableDomain),
// overridden per callback id (cuptiEnableCallback).
struct DomainSwitches {
  bool whole = false;
  std::map<CUpti_CallbackId, bool> single;
};

struct Sim {
  std::mutex mu;
  std::condition_variable handback_done;         // FlushAll waits for hand-backs begun before it
  Counters counters;                             // atomics, read without the lock

  // Callback API.
  std::deque<CUpti_Subscriber_st> handles;  // every handle given out, so a stale one never matches
  CUpti_Subscriber_st* subscriber = nullptr;
  CUpti_CallbackFunc callback = nullptr;
  void* userdata = nullptr;
  DomainSwitches domains[CUPTI_CB_DOMAIN_SIZE];

  // Activity API.
  std::set<CUpti_ActivityKind> kinds;
  std::map<CUpti_CallbackId, bool> runtime_api, driver_api;  // per-API record switches
  CUpti_BuffersCallbackRequestFunc requested = nullptr;
  CUpti_BuffersCallbackCompleteFunc completed = nullptr;
  CUpti_ActivityThreadIdType thread_id_type = CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT;
  uint8_t* buffer = nullptr;  // the one current buffer, shared by all threads
  size_t buffer_size = 0;
  size_t buffer_used = 0;
  size_t buffer_records = 0;
  size_t buffer_max_records = 0;  // 0: as many as fit
  size_t dropped = 0;             // since the last cuptiActivityGetNumDroppedRecords
  std::set<uint64_t> in_flight;   // hand-backs begun and not finished, by sequence
  uint64_t next_handback = 0;

  // The simulated GPU and process.
  std::map<uint32_t, uint64_t> stream_busy_until;
  std::unordered_set<std::string> strings;  // record strings, owned here as CUPTI owns its own
  std::atomic<bool> nvtx_injected{false};
  std::atomic<uint32_t> next_correlation{1};
  std::atomic<uint32_t> next_range_id{1};
  std::atomic<int64_t> next_grid_id{1};
};

Sim& sim() {
  static Sim* s = new Sim;  // never destroyed: the agent calls CUPTI from its atexit handler
  return *s;
}

// Set while an API-exit callback runs on this thread (cuptiFinalize counts calls made there).
thread_local bool t_in_api_exit_callback = false;
// Subscriber callbacks running on this thread: CUPTI calls made inside them are the agent's
// work on the job's thread.
thread_local int t_callback_depth = 0;

using strata_sim::note_cupti_call;
// Set while this thread hands a buffer back (a FlushAll from in there must not wait on itself).
thread_local bool t_handing_back = false;
// This thread's open NVTX ranges, innermost last.
thread_local std::deque<uint32_t> t_nvtx_ranges;

uint32_t thread_id(const Sim& s) {
  if (s.thread_id_type == CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM) return static_cast<uint32_t>(gettid());
  return static_cast<uint32_t>(pthread_self());  // what CUPTI's default type reports
}

const char* own_string(Sim& s, const char* text) {
  return text == nullptr ? nullptr : s.strings.insert(text).first->c_str();
}

bool callback_enabled(const Sim& s, CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  const DomainSwitches& d = s.domains[domain];
  const auto it = d.single.find(cbid);
  return it != d.single.end() ? it->second : d.whole;
}

bool valid_cbid(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  switch (domain) {
    case CUPTI_CB_DOMAIN_RUNTIME_API: return cbid > 0 && cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE;
    case CUPTI_CB_DOMAIN_DRIVER_API: return cbid > 0 && cbid < CUPTI_DRIVER_TRACE_CBID_SIZE;
    case CUPTI_CB_DOMAIN_NVTX: return cbid > 0 && cbid < CUPTI_CBID_NVTX_SIZE;
    default: return domain > CUPTI_CB_DOMAIN_INVALID && domain < CUPTI_CB_DOMAIN_SIZE;
  }
}

// Whether a record of `kind` is written now. API records follow the per-API switches when
// one was set after the kind (cuptiActivityEnableRuntimeApi / DriverApi), else the kind.
bool record_enabled(const Sim& s, CUpti_ActivityKind kind, CUpti_CallbackId cbid) {
  const bool kind_on = s.kinds.count(kind) != 0;
  if (kind != CUPTI_ACTIVITY_KIND_RUNTIME && kind != CUPTI_ACTIVITY_KIND_DRIVER) return kind_on;
  const auto& per_api = kind == CUPTI_ACTIVITY_KIND_RUNTIME ? s.runtime_api : s.driver_api;
  const auto it = per_api.find(cbid);
  return it != per_api.end() ? it->second : kind_on;
}

// Detaches the current buffer for hand-back; the caller hands it back after unlocking.
Handback take_buffer(Sim& s) {
  Handback h{s.buffer, s.buffer_size, s.buffer_used, s.next_handback++, s.completed};
  s.in_flight.insert(h.seq);
  s.buffer = nullptr;
  return h;
}

void hand_back(const Handback& h) {
  Sim& s = sim();
  t_handing_back = true;
  if (h.completed != nullptr) h.completed(nullptr, 0, h.buffer, h.size, h.valid);
  t_handing_back = false;
  s.counters.buffers_completed.fetch_add(1);
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.in_flight.erase(h.seq);
  }
  s.handback_done.notify_all();
}

// Up to two buffers leave a record's write: the full one, and a new one too small to use.
struct Handbacks {
  Handback list[2];
  int count = 0;
  void add(const Handback& h) { list[count++] = h; }
  void run() const {
    for (int i = 0; i < count; ++i) hand_back(list[i]);
  }
};

// Asks the client for a buffer able to hold `need` bytes; no buffer means the record is dropped.
void request_buffer(Sim& s, size_t need, Handbacks& out) {
  if (s.requested == nullptr) return;
  s.counters.buffers_requested.fetch_add(1);
  uint8_t* b = nullptr;
  size_t size = 0;
  size_t max_records = 0;
  s.requested(&b, &size, &max_records);  // the agent's is lock-free and calls no CUPTI
  if (b == nullptr || size == 0) {
    s.counters.buffers_refused.fetch_add(1);
    return;
  }
  s.buffer = b;
  s.buffer_size = size;
  s.buffer_used = 0;
  s.buffer_records = 0;
  s.buffer_max_records = max_records;
  if (size < need || reinterpret_cast<uintptr_t>(b) % 8 != 0) out.add(take_buffer(s));  // unusable: back, empty
}

enum class Emitted { Off, Stored, Dropped };

// Writes one activity record of `kind` if it is enabled now; `fill` builds it in place,
// under the lock, so kinds switched off and flushed never see a record after the fact.
template <class Record, class Fill>
Emitted emit(CUpti_ActivityKind kind, CUpti_CallbackId cbid, Fill fill) {
  Sim& s = sim();
  constexpr size_t need = sizeof(RecordHeader) + align8(sizeof(Record));
  Handbacks handbacks;
  Emitted result = Emitted::Dropped;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (!record_enabled(s, kind, cbid)) return Emitted::Off;
    const bool full = s.buffer != nullptr && (s.buffer_used + need > s.buffer_size ||
                                              (s.buffer_max_records > 0 && s.buffer_records >= s.buffer_max_records));
    if (full) handbacks.add(take_buffer(s));
    if (s.buffer == nullptr) request_buffer(s, need, handbacks);
    if (s.buffer == nullptr) {
      ++s.dropped;
    } else {
      auto* header = reinterpret_cast<RecordHeader*>(s.buffer + s.buffer_used);
      header->bytes = static_cast<uint32_t>(need);
      header->magic = kRecordMagic;
      Record* rec = new (header + 1) Record{};
      fill(*rec, s);
      s.buffer_used += need;
      ++s.buffer_records;
      result = Emitted::Stored;
    }
  }
  handbacks.run();
  const bool kernel = kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  s.counters.records_produced.fetch_add(1);
  if (kernel) s.counters.kernels_produced.fetch_add(1);
  if (result == Emitted::Dropped) {
    s.counters.records_dropped.fetch_add(1);
    if (kernel) s.counters.kernels_dropped.fetch_add(1);
  } else if (kind == CUPTI_ACTIVITY_KIND_RUNTIME && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020) {
    s.counters.noisy_records_stored.fetch_add(1);
  }
  return result;
}

// Calls the subscriber for (domain, cbid) if it enabled that callback; true if it did.
bool issue_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data, bool api_exit) {
  Sim& s = sim();
  CUpti_CallbackFunc fn = nullptr;
  void* userdata = nullptr;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.subscriber == nullptr || s.callback == nullptr || !callback_enabled(s, domain, cbid)) return false;
    fn = s.callback;
    userdata = s.userdata;
  }
  const bool outer = t_in_api_exit_callback;
  t_in_api_exit_callback = api_exit;
  ++t_callback_depth;
  fn(userdata, domain, cbid, data);
  --t_callback_depth;
  t_in_api_exit_callback = outer;
  s.counters.callbacks_delivered.fetch_add(1);
  if (domain == CUPTI_CB_DOMAIN_NVTX) s.counters.nvtx_callbacks_delivered.fetch_add(1);
  return true;
}

// One simulated runtime call: ENTER callback, the call's work (which may write GPU
// records), its API record, EXIT callback. `work` returns whether it produced a record.
template <class Work>
void runtime_call(CUpti_CallbackId cbid, const char* function, const void* params, const char* symbol, Work work) {
  Sim& s = sim();
  const uint64_t epoch = s.counters.finalize_calls.load();
  s.counters.api_calls.fetch_add(1);
  s.counters.api_calls_since_finalize.fetch_add(1);
  const uint32_t correlation = s.next_correlation.fetch_add(1);
  uint64_t correlation_data = 0;
  int return_value = 0;  // cudaSuccess
  CUpti_CallbackData data{};
  data.functionName = function;
  data.functionParams = params;
  data.functionReturnValue = &return_value;
  data.symbolName = symbol;
  data.context = strata_sim::context();
  data.contextUid = kContextId;
  data.correlationData = &correlation_data;
  data.correlationId = correlation;

  const uint64_t start = now_ns();
  data.callbackSite = CUPTI_API_ENTER;
  bool instrumented = issue_callback(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &data, false);
  instrumented |= work(correlation);
  const uint64_t end = now_ns();
  const auto fill_api = [&](CUpti_ActivityAPI& r, Sim& locked) {
    r.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
    r.cbid = cbid;
    r.start = start;
    r.end = end;
    r.processId = static_cast<uint32_t>(getpid());
    r.threadId = thread_id(locked);
    r.correlationId = correlation;
  };
  const Emitted api_record = emit<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_RUNTIME, cbid, fill_api);
  instrumented |= api_record != Emitted::Off;
  data.callbackSite = CUPTI_API_EXIT;
  instrumented |= issue_callback(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &data, true);
  // A call during which cuptiFinalize ran belongs to the epoch before it.
  if (instrumented && s.counters.finalize_calls.load() == epoch)
    s.counters.instrumented_calls_since_finalize.fetch_add(1);
}

// Marker records of an NVTX range's start (with its name) or end.
void emit_marker(CUpti_ActivityFlag flag, uint32_t id, const char* name) {
  const uint64_t ts = now_ns();
  emit<CUpti_ActivityMarker2>(CUPTI_ACTIVITY_KIND_MARKER, 0, [&](CUpti_ActivityMarker2& m, Sim& s) {
    m.kind = CUPTI_ACTIVITY_KIND_MARKER;
    m.flags = flag;
    m.timestamp = ts;
    m.id = id;
    m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
    m.objectId.pt.processId = static_cast<uint32_t>(getpid());
    m.objectId.pt.threadId = thread_id(s);
    m.name = own_string(s, name);
    m.domain = nullptr;  // the default domain
  });
}

// Where a kernel launched now runs on its stream's simulated clock: after the launch latency
// and after the stream's previous kernel. The GPU runs it whether or not it is recorded.
uint64_t schedule_kernel(uint32_t stream, uint64_t duration_ns) {
  Sim& s = sim();
  const uint64_t launched = now_ns();
  std::lock_guard<std::mutex> lock(s.mu);
  uint64_t& busy = s.stream_busy_until[stream];
  const uint64_t start = std::max(launched + kLaunchLatencyNs, busy + kKernelGapNs);
  busy = start + duration_ns;
  return start;
}

Emitted emit_kernel(const char* name, uint32_t stream, uint64_t start, uint64_t duration_ns, uint32_t correlation) {
  return emit<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, 0, [&](CUpti_ActivityKernel10& k, Sim& s) {
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.registersPerThread = 32;
    k.start = start;
    k.end = start + duration_ns;
    k.completed = k.end;
    k.deviceId = kDeviceId;
    k.contextId = kContextId;
    k.streamId = stream;
    k.gridX = 128;
    k.gridY = k.gridZ = 1;
    k.blockX = 256;
    k.blockY = k.blockZ = 1;
    k.staticSharedMemory = 4096;
    k.correlationId = correlation;
    k.gridId = s.next_grid_id.fetch_add(1);
    k.name = own_string(s, name);
  });
}

// cudaDeviceSynchronize's work: sleeps until every stream's simulated kernels are done.
Emitted synchronize_device(uint32_t correlation) {
  Sim& s = sim();
  const uint64_t start = now_ns();
  uint64_t idle_at = start;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    for (const auto& [stream, busy] : s.stream_busy_until) idle_at = std::max(idle_at, busy);
  }
  const std::chrono::nanoseconds idle_since_epoch(static_cast<int64_t>(idle_at));
  std::this_thread::sleep_until(std::chrono::steady_clock::time_point(idle_since_epoch));
  const uint64_t end = now_ns();
  const auto fill = [&](CUpti_ActivitySynchronization2& r, Sim&) {
    r.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    r.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE;
    r.start = start;
    r.end = end;
    r.correlationId = correlation;
    r.contextId = kContextId;
    r.streamId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
    r.cudaEventId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  };
  return emit<CUpti_ActivitySynchronization2>(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, 0, fill);
}

struct CallbackName {
  CUpti_CallbackDomain domain;
  CUpti_CallbackId cbid;
  const char* name;
};
// The callback ids the simulated job calls (and a few the agent looks for), with CUPTI's names.
constexpr CallbackName kCallbackNames[] = {
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, "cudaGetDevice_v3020"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, "cudaMemcpyAsync_v3020"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020, "cudaDeviceSynchronize_v3020"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000, "cudaProfilerStart_v4000"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000, "cudaProfilerStop_v4000"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, "cudaLaunchKernel_v7000"},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, "cuCtxSynchronize"},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel"},
};

bool known_kind(CUpti_ActivityKind kind) {
  return kind > CUPTI_ACTIVITY_KIND_INVALID && kind < CUPTI_ACTIVITY_KIND_COUNT;
}

}  // namespace

namespace strata_sim {

void note_cupti_call() {
  if (t_callback_depth > 0) sim().counters.cupti_calls_in_callbacks.fetch_add(1);
}

CUcontext context() {
  static int the_context = 0;
  return reinterpret_cast<CUcontext>(&the_context);
}

}  // namespace strata_sim

// ---- CUPTI: callback API ----

CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback, void* userdata) {
  note_cupti_call();
  if (subscriber == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  Sim& s = sim();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.subscriber != nullptr) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  s.handles.push_back(CUpti_Subscriber_st{s.handles.size() + 1});
  s.subscriber = &s.handles.back();
  s.callback = callback;
  s.userdata = userdata;
  for (DomainSwitches& d : s.domains) d = DomainSwitches{};
  *subscriber = s.subscriber;
  s.counters.subscribe_calls.fetch_add(1);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle subscriber) {
  note_cupti_call();
  Sim& s = sim();
  std::lock_guard<std::mutex> lock(s.mu);
  if (subscriber == nullptr || subscriber != s.subscriber) return CUPTI_ERROR_INVALID_PARAMETER;
  s.subscriber = nullptr;
  s.callback = nullptr;
  s.userdata = nullptr;
  for (DomainSwitches& d : s.domains) d = DomainSwitches{};
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                         CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  note_cupti_call();
  Sim& s = sim();
  std::lock_guard<std::mutex> lock(s.mu);
  if (subscriber == nullptr || subscriber != s.subscriber || !valid_cbid(domain, cbid))
    return CUPTI_ERROR_INVALID_PARAMETER;
  s.domains[domain].single[cbid] = enable != 0;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                       CUpti_CallbackDomain domain) {
  note_cupti_call();
  Sim& s = sim();
  std::lock_guard<std::mutex> lock(s.mu);
  if (subscriber == nullptr || subscriber != s.subscriber || domain <= CUPTI_CB_DOMAIN_INVALID ||
      domain >= CUPTI_CB_DOMAIN_SIZE)
    return CUPTI_ERROR_INVALID_PARAMETER;
  s.domains[domain] = DomainSwitches{enable != 0, {}};
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid, const char** name) {
  note_cupti_call();
  if (name == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *name = nullptr;
  for (const CallbackName& c : kCallbackNames) {
    if (c.domain == domain && c.cbid == cbid) {
      *name = c.name;
      return CUPTI_SUCCESS;
    }
  }
  return CUPTI_ERROR_INVALID_PARAMETER;
}

// ---- CUPTI: activity API ----

CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                                    CUpti_BuffersCallbackCompleteFunc completed) {
  note_cupti_call();
  if (requested == nullptr || completed == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  Sim& s = sim();
  std::lock_guard<std::mutex> lock(s.mu);
  s.requested = requested;
  s.completed = completed;
  return CUPTI_SUCCESS;
}

// Switching the kind on or off resets the per-API switches made before (cupti_activity.h).
static CUptiResult switch_kind(CUpti_ActivityKind kind, bool on) {
  note_cupti_call();
  if (!known_kind(kind)) return CUPTI_ERROR_INVALID_KIND;
  Sim& s = sim();
  std::lock_guard<std::mutex> lock(s.mu);
  if (on) s.kinds.insert(kind);
  else s.kinds.erase(kind);
  if (kind == CUPTI_ACTIVITY_KIND_RUNTIME) s.runtime_api.clear();
  if (kind == CUPTI_ACTIVITY_KIND_DRIVER) s.driver_api.clear();
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) { return switch_kind(kind, true); }
CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind) { return switch_kind(kind, false); }

static CUptiResult switch_api(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, uint8_t enable) {
  note_cupti_call();
  if (!valid_cbid(domain, cbid)) return CUPTI_ERROR_INVALID_PARAMETER;
  Sim& s = sim();
  std::lock_guard<std::mutex> lock(s.mu);
  (domain == CUPTI_CB_DOMAIN_RUNTIME_API ? s.runtime_api : s.driver_api)[cbid] = enable != 0;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable) {
  return switch_api(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, enable);
}
CUptiResult CUPTIAPI cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable) {
  return switch_api(CUPTI_CB_DOMAIN_DRIVER_API, cbid, enable);
}

CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
  note_cupti_call();
  if (dropped == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  Sim& s = sim();
  std::lock_guard<std::mutex> lock(s.mu);
  *dropped = s.dropped;
  s.counters.dropped_reported.fetch_add(s.dropped);
  s.dropped = 0;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  note_cupti_call();
  if (buffer == nullptr || record == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  size_t offset = 0;
  if (*record != nullptr) {
    const uint8_t* at = reinterpret_cast<const uint8_t*>(*record) - sizeof(RecordHeader);
    const auto* prev = reinterpret_cast<const RecordHeader*>(at);
    if (prev->magic != kRecordMagic) return CUPTI_ERROR_INVALID_KIND;
    offset = static_cast<size_t>(reinterpret_cast<const uint8_t*>(prev) - buffer) + prev->bytes;
  }
  if (offset + sizeof(RecordHeader) > valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  const auto* header = reinterpret_cast<const RecordHeader*>(buffer + offset);
  if (header->magic != kRecordMagic || header->bytes <= sizeof(RecordHeader) || offset + header->bytes > valid)
    return CUPTI_ERROR_INVALID_KIND;
  *record = reinterpret_cast<CUpti_Activity*>(buffer + offset + sizeof(RecordHeader));
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t) {
  note_cupti_call();
  Sim& s = sim();
  s.counters.flush_all_calls.fetch_add(1);
  Handback h;
  bool have = false;
  uint64_t begun_before = 0;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.completed == nullptr) return CUPTI_ERROR_INVALID_OPERATION;
    if (s.buffer != nullptr && s.buffer_used > 0) {
      h = take_buffer(s);
      have = true;
    }
    begun_before = s.next_handback;
  }
  if (have) hand_back(h);
  if (t_handing_back) return CUPTI_SUCCESS;  // called from a completed callback: do not wait on ourselves
  // Buffers other threads were already handing back are back too when this returns.
  std::unique_lock<std::mutex> lock(s.mu);
  s.handback_done.wait(lock, [&] { return s.in_flight.empty() || *s.in_flight.begin() >= begun_before; });
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t* timestamp) {
  note_cupti_call();
  if (timestamp == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *timestamp = now_ns();
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiSetThreadIdType(CUpti_ActivityThreadIdType type) {
  note_cupti_call();
  if (type != CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT && type != CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM)
    return CUPTI_ERROR_NOT_SUPPORTED;
  Sim& s = sim();
  std::lock_guard<std::mutex> lock(s.mu);
  s.thread_id_type = type;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char** str) {
  note_cupti_call();
  if (str == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  switch (result) {
    case CUPTI_SUCCESS: *str = "CUPTI_SUCCESS"; break;
    case CUPTI_ERROR_INVALID_PARAMETER: *str = "CUPTI_ERROR_INVALID_PARAMETER"; break;
    case CUPTI_ERROR_INVALID_OPERATION: *str = "CUPTI_ERROR_INVALID_OPERATION"; break;
    case CUPTI_ERROR_MAX_LIMIT_REACHED: *str = "CUPTI_ERROR_MAX_LIMIT_REACHED"; break;
    case CUPTI_ERROR_NOT_INITIALIZED: *str = "CUPTI_ERROR_NOT_INITIALIZED"; break;
    case CUPTI_ERROR_INVALID_KIND: *str = "CUPTI_ERROR_INVALID_KIND"; break;
    case CUPTI_ERROR_NOT_SUPPORTED: *str = "CUPTI_ERROR_NOT_SUPPORTED"; break;
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED: *str = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"; break;
    case CUPTI_ERROR_UNKNOWN: *str = "CUPTI_ERROR_UNKNOWN"; break;
    default: *str = nullptr; return CUPTI_ERROR_INVALID_PARAMETER;
  }
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetDeviceId(CUcontext context, uint32_t* device) {
  note_cupti_call();
  if (device == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  if (context != strata_sim::context()) return CUPTI_ERROR_INVALID_CONTEXT;
  *device = kDeviceId;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetVersion(uint32_t* version) {
  note_cupti_call();
  if (version == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *version = CUPTI_API_VERSION;
  return CUPTI_SUCCESS;
}

// Detaches CUPTI: the subscriber, its callbacks, every activity kind and per-API switch, the
// buffer callbacks, the flush period and the dropped count go. It flushes nothing: a buffer
// still held is never handed back (the caller had to flush first), which is counted, as are
// drops never asked for. The next call finds a fresh CUPTI, as the real one initializes lazily.
CUptiResult CUPTIAPI cuptiFinalize(void) {
  note_cupti_call();
  Sim& s = sim();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.counters.finalize_calls.fetch_add(1);
    if (t_in_api_exit_callback) s.counters.finalize_in_exit_callback.fetch_add(1);
    if (s.buffer != nullptr) s.counters.buffers_outstanding_at_finalize.fetch_add(1);
    s.counters.dropped_unread_at_finalize.fetch_add(s.dropped);
    s.buffer = nullptr;
    s.subscriber = nullptr;
    s.callback = nullptr;
    s.userdata = nullptr;
    for (DomainSwitches& d : s.domains) d = DomainSwitches{};
    s.kinds.clear();
    s.runtime_api.clear();
    s.driver_api.clear();
    s.requested = nullptr;
    s.completed = nullptr;
    s.thread_id_type = CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT;
    s.dropped = 0;
    s.counters.api_calls_since_finalize.store(0);
    s.counters.instrumented_calls_since_finalize.store(0);
  }
  return CUPTI_SUCCESS;
}

// NVTX's hook: NVTX hands CUPTI its export table (through the injection library that names
// us); from then on NVTX calls reach CUPTI.
extern "C" int InitializeInjectionNvtx2(const void*) {
  sim().nvtx_injected.store(true);
  return 1;
}

// ---- The simulated job's calls (sim_api.h) ----

void strata_sim_cuda_launch_kernel(const char* name, uint32_t stream, uint64_t duration_ns) {
  cudaLaunchKernel_v7000_params params{};
  params.func = name;
  params.gridDim = dim3(128, 1, 1);
  params.blockDim = dim3(256, 1, 1);
  params.stream = reinterpret_cast<cudaStream_t>(uintptr_t{stream});
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, "cudaLaunchKernel", &params, name,
               [&](uint32_t correlation) {
                 const uint64_t start = schedule_kernel(stream, duration_ns);
                 strata_sim::range_profiler_kernel_ran(strata_sim::context(), name, duration_ns);
                 return emit_kernel(name, stream, start, duration_ns, correlation) != Emitted::Off;
               });
}

int strata_sim_cuda_get_device(void) {
  int device = -1;
  cudaGetDevice_v3020_params params{&device};
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, "cudaGetDevice", &params, nullptr, [&](uint32_t) {
    device = static_cast<int>(kDeviceId);
    return false;
  });
  return device;
}

void strata_sim_cuda_device_synchronize(void) {
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020, "cudaDeviceSynchronize", nullptr, nullptr,
               [](uint32_t correlation) { return synchronize_device(correlation) != Emitted::Off; });
}

void strata_sim_cuda_profiler_start(void) {
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000, "cudaProfilerStart", nullptr, nullptr,
               [](uint32_t) { return false; });
}

void strata_sim_cuda_profiler_stop(void) {
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000, "cudaProfilerStop", nullptr, nullptr,
               [](uint32_t) { return false; });
}

// The marker record comes before the callback: a recording that the callback starts misses
// the start of the range that started it, as with the real CUPTI (the agent supplies it).
int strata_sim_nvtx_range_push(const char* message) {
  Sim& s = sim();
  if (!s.nvtx_injected.load()) return -2;  // NVTX_NO_PUSH_POP_TRACKING: no tool attached
  s.counters.nvtx_calls.fetch_add(1);
  const uint32_t id = s.next_range_id.fetch_add(1);
  t_nvtx_ranges.push_back(id);
  int level = static_cast<int>(t_nvtx_ranges.size()) - 1;
  emit_marker(CUPTI_ACTIVITY_FLAG_MARKER_START, id, message);
  nvtxRangePushA_params params{message};
  const CUpti_NvtxData data{"nvtxRangePushA", &params, &level};
  issue_callback(CUPTI_CB_DOMAIN_NVTX, CUPTI_CBID_NVTX_nvtxRangePushA, &data, false);
  return level;
}

int strata_sim_nvtx_range_pop(void) {
  Sim& s = sim();
  if (!s.nvtx_injected.load()) return -2;
  if (t_nvtx_ranges.empty()) return -1;
  s.counters.nvtx_calls.fetch_add(1);
  const uint32_t id = t_nvtx_ranges.back();
  t_nvtx_ranges.pop_back();
  int level = static_cast<int>(t_nvtx_ranges.size());
  emit_marker(CUPTI_ACTIVITY_FLAG_MARKER_END, id, nullptr);
  nvtxRangePop_params params{};
  const CUpti_NvtxData data{"nvtxRangePop", &params, &level};
  issue_callback(CUPTI_CB_DOMAIN_NVTX, CUPTI_CBID_NVTX_nvtxRangePop, &data, false);
  return level;
}

void strata_sim_read_counters(StrataSimCounters* out) {
  Sim& s = sim();
#define STRATA_SIM_READ(name) out->name = s.counters.name.load();
  STRATA_SIM_COUNTERS(STRATA_SIM_READ)
#undef STRATA_SIM_READ
  std::lock_guard<std::mutex> lock(s.mu);
  out->subscribed_at_end = s.subscriber != nullptr ? 1 : 0;
  out->kinds_enabled_at_end = s.kinds.size();
  strata_sim::range_profiler_counters(*out);
}
