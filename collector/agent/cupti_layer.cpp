// Everything that calls CUPTI: subscription and its release between recordings, the
// activity-buffer callbacks, which kinds are recorded, and the NVTX /
// cudaProfilerStart-Stop callbacks that count iterations.
// Code here may run on the job's threads: it never takes a lock and never waits.
#include <cupti.h>
#include <fnmatch.h>
#include <nvtx3/nvToolsExt.h>
#include <generated_nvtx_meta.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iterator>
#include <cstring>
#include <thread>
#include <vector>

#include "../protocol/kinds.h"
#include "../trace/api_names.h"
#include "../trace/cupti_decode.h"
#include "agent.h"
#include "buffer_pool.h"
#include "range_profiler.h"

namespace strata::agent {

namespace {

using collector::RecordKind;

constexpr size_t kBufferBytes = size_t{2} << 20;
constexpr size_t kDefaultPoolMiB = 64;
constexpr uint8_t kNoisyApi = 1;
constexpr uint8_t kUnrecordedApi = 2;

// Where CUPTI stands between recordings. Once activities have been on, CUPTI keeps slowing
// every launch until it is finalized, and cuptiFinalize belongs at an API's exit callsite:
// Releasing asks the next CUDA call on a job thread to do it (Finalizing while it runs).
// After Released no CUPTI function may be called until the next recording subscribes
// again: any call would bring CUPTI back.
enum class Attachment : int { Attached, Releasing, Finalizing, Released };

struct Cupti {
  CUpti_SubscriberHandle subscriber = nullptr;  // written only while no job thread can read it
  std::atomic<Attachment> attachment{Attachment::Attached};
  BufferPool pool;
  // Runtime APIs by callback id: kNoisyApi (off for runtime-all), kUnrecordedApi (off for
  // runtime). Filled once at attach; `runtime_off` says which class the recording leaves out.
  std::vector<uint8_t> runtime_class;
  std::atomic<uint8_t> runtime_off{0};
  std::vector<CUpti_CallbackId> recorded_driver;   // driver: switched on one by one
  uint32_t enabled = 0;                            // the kinds mask of the current recording
};
Cupti& cupti() {
  static Cupti* c = new Cupti;  // never destroyed: callbacks may fire during exit
  return *c;
}

std::string result_text(CUptiResult r) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  return s != nullptr ? s : "CUPTI error " + std::to_string(static_cast<int>(r));
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *max_records = 0;
  *buffer = cupti().pool.acquire();
  *size = *buffer != nullptr ? cupti().pool.buffer_bytes() : 0;  // 0: CUPTI drops and counts
}

// Adds what CUPTI dropped (no buffer to write into) since it was last asked.
void count_dropped(CUcontext ctx, uint32_t stream) {
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped > 0)
    shared().cupti_dropped.fetch_add(dropped, std::memory_order_relaxed);
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t, size_t valid) {
  count_dropped(ctx, stream);
  if (buffer != nullptr) cupti().pool.complete(buffer, valid);
  wake_control();
}

// The launch gate. While hardware metrics are on, the recording switches on or off only between
// launches: the switch waits for the launches in flight, and a launch entering during a switch
// waits for it to end (a few CUPTI calls). A launch is then profiled exactly when its kernel is
// recorded. The counter is reset whenever the launch callbacks are turned on or off, since an
// exit callback may then never come; the wait is bounded, so a lost exit costs time, never a stall.
struct LaunchGate {
  std::atomic<int> in_flight{0};
  std::atomic<uint32_t> epoch{1};
};
LaunchGate& gate() {
  static LaunchGate g;
  return g;
}
thread_local uint32_t t_gate_epoch = 0;
thread_local int t_gate_depth = 0;  // the runtime's launch calls the driver's: counted once

bool switching(State st) { return st == State::Starting || st == State::Disabling; }

// Returns whether the recording is on for this launch.
bool gate_enter() {
  LaunchGate& g = gate();
  if (const uint32_t e = g.epoch.load(); t_gate_epoch != e) {
    t_gate_epoch = e;
    t_gate_depth = 0;
  }
  if (t_gate_depth++ > 0) return shared().state.load() == State::Recording;
  for (;;) {
    while (switching(shared().state.load())) std::this_thread::yield();
    g.in_flight.fetch_add(1);
    if (const State st = shared().state.load(); !switching(st)) return st == State::Recording;
    g.in_flight.fetch_sub(1);
  }
}

void gate_exit() {
  if (t_gate_epoch != gate().epoch.load() || t_gate_depth == 0) return;
  if (--t_gate_depth == 0) gate().in_flight.fetch_sub(1);
}

// Armed -> Recording on the job's thread, so the first iteration is recorded whole.
// `range` is the NVTX range that triggered it, if any.
void trigger_start(const char* range) {
  Shared& sh = shared();
  State expected = State::Armed;
  if (!sh.state.compare_exchange_strong(expected, State::Starting)) return;
  if (range != nullptr) {
    cuptiGetTimestamp(&sh.trigger_range_ts);
    sh.trigger_range_tid = static_cast<uint32_t>(gettid());
    std::strncpy(sh.trigger_range_name, range, sizeof sh.trigger_range_name - 1);
    sh.trigger_range_ready.store(true, std::memory_order_release);
  }
  wait_for_launches();
  activities_enable();
  sh.state.store(State::Recording);
  wake_control();
}

void trigger_iteration_done() {
  Shared& sh = shared();
  if (sh.state.load() != State::Recording) return;
  if (sh.iterations_done.fetch_add(1) + 1 < sh.iterations_target.load()) return;
  State expected = State::Recording;
  if (!sh.state.compare_exchange_strong(expected, State::Disabling)) return;
  wait_for_launches();
  activities_disable();
  sh.state.store(State::Stopping);
  wake_control();
}

// Per-thread NVTX stack of "this range matched the pattern", 64 levels deep.
thread_local uint64_t t_matched = 0;
thread_local uint32_t t_depth = 0;

const char* push_message(CUpti_CallbackId cbid, const void* params) {
  if (cbid == CUPTI_CBID_NVTX_nvtxRangePushA) return static_cast<const nvtxRangePushA_params*>(params)->message;
  const nvtxEventAttributes_t* attr =
      cbid == CUPTI_CBID_NVTX_nvtxRangePushEx
          ? static_cast<const nvtxRangePushEx_params*>(params)->eventAttrib
          : static_cast<const nvtxDomainRangePushEx_params*>(params)->core.eventAttrib;
  return attr != nullptr && attr->messageType == NVTX_MESSAGE_TYPE_ASCII ? attr->message.ascii : nullptr;
}

void on_nvtx(CUpti_CallbackId cbid, const CUpti_NvtxData* data) {
  if (cbid == CUPTI_CBID_NVTX_nvtxRangePop || cbid == CUPTI_CBID_NVTX_nvtxDomainRangePop) {
    if (t_depth == 0) return;
    --t_depth;
    const bool matched = t_depth < 64 && ((t_matched >> t_depth) & 1u) != 0;
    if (matched) trigger_iteration_done();
    return;
  }
  const char* msg = push_message(cbid, data->functionParams);
  const char* pattern = shared().pattern.load(std::memory_order_acquire);
  const bool matched = msg != nullptr && pattern != nullptr && fnmatch(pattern, msg, FNM_CASEFOLD) == 0;
  if (t_depth < 64) {
    const uint64_t bit = uint64_t{1} << t_depth;
    t_matched = matched ? (t_matched | bit) : (t_matched & ~bit);
  }
  ++t_depth;
  if (matched) trigger_start(msg);
}

// On a job thread, at the exit of the first CUDA call after a release was asked for.
void finalize_here() {
  Cupti& c = cupti();
  Attachment expected = Attachment::Releasing;
  if (!c.attachment.compare_exchange_strong(expected, Attachment::Finalizing)) return;
  cuptiUnsubscribe(c.subscriber);
  cuptiFinalize();
  c.attachment.store(Attachment::Released);
  wake_control();
}

// The kernel launches --metrics profiles: runtime (<<<>>>, cudaLaunchKernel[ExC], cooperative)
// and driver (Triton, cuBLAS's cuLaunchKernelEx), per-thread-stream variants included.
constexpr CUpti_CallbackId kRuntimeLaunches[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,         CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,     CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
#if CUPTI_API_VERSION >= 130000
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,      CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
#endif
};
constexpr CUpti_CallbackId kDriverLaunches[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,           CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,         CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
};

bool is_launch_api(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  const auto in = [cbid](const auto& ids) { return std::find(std::begin(ids), std::end(ids), cbid) != std::end(ids); };
  return domain == CUPTI_CB_DOMAIN_RUNTIME_API ? in(kRuntimeLaunches) : domain == CUPTI_CB_DOMAIN_DRIVER_API && in(kDriverLaunches);
}

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if ((domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API) &&
      cupti().attachment.load(std::memory_order_relaxed) == Attachment::Releasing) {
    if (static_cast<const CUpti_CallbackData*>(data)->callbackSite == CUPTI_API_EXIT) finalize_here();
    return;
  }
  if (domain == CUPTI_CB_DOMAIN_NVTX) {
    if (shared().trigger.load() == Trigger::Nvtx) on_nvtx(cbid, static_cast<const CUpti_NvtxData*>(data));
    return;
  }
  const auto* d = static_cast<const CUpti_CallbackData*>(data);
  if (is_launch_api(domain, cbid)) {
    const bool recording = d->callbackSite == CUPTI_API_ENTER && gate_enter();
    metrics_on_launch(*d, recording);
    if (d->callbackSite == CUPTI_API_EXIT) gate_exit();
    return;
  }
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API || shared().trigger.load() != Trigger::ProfilerApi) return;
  if (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000 && d->callbackSite == CUPTI_API_EXIT)
    trigger_start(nullptr);
  else if (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000 && d->callbackSite == CUPTI_API_ENTER)
    trigger_iteration_done();
}

std::string_view api_name(RecordKind kind, uint32_t cbid) {
  const char* name = nullptr;
  const auto domain = kind == RecordKind::Runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API;
  if (cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || name == nullptr) return "unknown CUDA API";
  return collector::strip_api_version(name);
}

void classify_apis(Cupti& c) {
  c.runtime_class.assign(CUPTI_RUNTIME_TRACE_CBID_SIZE, 0);
  for (uint32_t id = 1; id < CUPTI_RUNTIME_TRACE_CBID_SIZE; ++id) {
    const std::string_view name = api_name(RecordKind::Runtime, id);
    if (collector::is_noisy_api(name)) c.runtime_class[id] |= kNoisyApi;
    if (!collector::is_recorded_runtime_api(name)) c.runtime_class[id] |= kUnrecordedApi;
  }
  for (uint32_t id = 1; id < CUPTI_DRIVER_TRACE_CBID_SIZE; ++id)
    if (collector::is_recorded_driver_api(api_name(RecordKind::Driver, id))) c.recorded_driver.push_back(id);
}

size_t pool_buffers() {
  size_t mib = kDefaultPoolMiB;
  if (const char* e = std::getenv("STRATA_BUFFER_MB"); e != nullptr && std::atoi(e) > 0)
    mib = static_cast<size_t>(std::atoi(e));
  return std::max<size_t>(2, (mib << 20) / kBufferBytes);
}

// Activity kinds switched on whole, by kinds bit. RUNTIME and DRIVER are handled apart.
// Runtime: the kind, then per-API switches off (cuptiActivityEnableRuntimeApi): all but the
// recorded calls (`runtime`), or only the noisy ones (`runtime-all`). Switching single APIs
// *on* without the kind stops working once the kind has been on and off in the process
// (seen with CUPTI 13.0), hence off-switches after the kind. Driver: the few recorded
// APIs on (cuptiActivityEnableDriverApi), never the kind.
struct KindMap {
  uint32_t bit;
  CUpti_ActivityKind kind;
  bool optional;  // not every driver/CUPTI supports it; the recording goes on without
};
constexpr KindMap kKinds[] = {
    {collector::kKindKernel, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, false},
    {collector::kKindMemcpy, CUPTI_ACTIVITY_KIND_MEMCPY, false},
    {collector::kKindMemset, CUPTI_ACTIVITY_KIND_MEMSET, false},
    {collector::kKindSync, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, true},
    {collector::kKindExternal, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, false},
    {collector::kKindNvtx, CUPTI_ACTIVITY_KIND_MARKER, true},
    {collector::kKindOverhead, CUPTI_ACTIVITY_KIND_OVERHEAD, true},
};

// Subscribes and registers the buffer callbacks: at injection, and again after a release.
Status subscribe() {
  Cupti& c = cupti();
  CUptiResult r = cuptiSubscribe(&c.subscriber, on_callback, nullptr);
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
    return Status::unsupported("another CUPTI tool is subscribed in this process (torch.profiler? Nsight?); only one can record at a time");
  if (r != CUPTI_SUCCESS) return Status::unsupported("CUPTI is not available (" + result_text(r) + "): no NVIDIA GPU or driver here?");
  r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  if (r != CUPTI_SUCCESS) {
    cuptiUnsubscribe(c.subscriber);
    return Status(StatusCode::Internal, "cannot register CUPTI buffer callbacks (" + result_text(r) + ")");
  }
  cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);  // OS tids, like the CPU rows
  return Status::ok();
}

void enable_api_domains(uint32_t enable) {
  cuptiEnableDomain(enable, cupti().subscriber, CUPTI_CB_DOMAIN_RUNTIME_API);
  cuptiEnableDomain(enable, cupti().subscriber, CUPTI_CB_DOMAIN_DRIVER_API);  // jobs that bypass the runtime
}

}  // namespace

Status cupti_attach() {
  Cupti& c = cupti();
  if (Status st = subscribe(); !st.is_ok()) return st;
  if (!c.pool.init(pool_buffers(), kBufferBytes)) {
    cuptiUnsubscribe(c.subscriber);
    return Status(StatusCode::OutOfMemory, "cannot allocate the activity buffer pool");
  }
  classify_apis(c);
  return Status::ok();
}

void cupti_release() {
  Cupti& c = cupti();
  if (c.attachment.load() != Attachment::Attached) return;
  enable_api_domains(1);
  c.attachment.store(Attachment::Releasing);
}

Status cupti_acquire() {
  Cupti& c = cupti();
  for (;;) {
    Attachment a = c.attachment.load();
    if (a == Attachment::Attached) return Status::ok();
    if (a == Attachment::Releasing) {
      if (!c.attachment.compare_exchange_strong(a, Attachment::Attached)) continue;
      enable_api_domains(0);  // no CUDA call came since the release: keep the subscription
      return Status::ok();
    }
    if (a == Attachment::Finalizing) {  // a job thread is inside cuptiFinalize: brief
      std::this_thread::yield();
      continue;
    }
    if (Status st = subscribe(); !st.is_ok()) return st;
    c.attachment.store(Attachment::Attached);
    return Status::ok();
  }
}

void cupti_keep() {
  Attachment a = Attachment::Releasing;
  cupti().attachment.compare_exchange_strong(a, Attachment::Attached);  // no CUPTI call: just never finalize
}

const char* cupti_attachment() {
  switch (cupti().attachment.load()) {
    case Attachment::Attached: return "attached";
    case Attachment::Releasing:
    case Attachment::Finalizing: return "releasing";
    case Attachment::Released: return "released";
  }
  return "unknown";
}

// No cuptiActivityFlushPeriod: with a period set, CUPTI 13 held full buffers for seconds and
// lost up to half of a 4 s recording's records without counting them (H100, collector/README);
// left to its own heuristics it hands back each full buffer at once and loses nothing.
bool activities_enable() {
  Cupti& c = cupti();
  const uint32_t mask = shared().kinds.load();
  c.enabled = mask;
  bool ok = true;
  // API calls on before GPU work (and off after it, in activities_disable): every kernel
  // recorded then has its launch, also when other threads launch while the kinds switch on.
  if ((mask & (collector::kKindRuntime | collector::kKindRuntimeAll)) != 0) {
    if (cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME) != CUPTI_SUCCESS) ok = false;
    const uint8_t off = (mask & collector::kKindRuntimeAll) != 0 ? kNoisyApi : kUnrecordedApi;
    c.runtime_off.store(off);
    for (uint32_t id = 1; id < c.runtime_class.size(); ++id)
      if ((c.runtime_class[id] & off) != 0) cuptiActivityEnableRuntimeApi(id, 0);  // after the kind
  }
  if ((mask & collector::kKindDriver) != 0)
    for (CUpti_CallbackId id : c.recorded_driver) cuptiActivityEnableDriverApi(id, 1);
  for (const KindMap& k : kKinds)
    if ((mask & k.bit) != 0 && cuptiActivityEnable(k.kind) != CUPTI_SUCCESS && !k.optional) ok = false;
  return ok;
}

void activities_disable() {
  Cupti& c = cupti();
  for (const KindMap& k : kKinds)
    if ((c.enabled & k.bit) != 0) cuptiActivityDisable(k.kind);
  if ((c.enabled & (collector::kKindRuntime | collector::kKindRuntimeAll)) != 0)
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_RUNTIME);
  if ((c.enabled & collector::kKindDriver) != 0)
    for (CUpti_CallbackId id : c.recorded_driver) cuptiActivityEnableDriverApi(id, 0);
  c.enabled = 0;
}

void wait_for_launches() {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(250);
  while (gate().in_flight.load() > 0 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
}

void activities_flush() { cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED); }

void set_trigger_callbacks(Trigger t, bool on) {
  const uint32_t enable = on ? 1 : 0;
  CUpti_SubscriberHandle sub = cupti().subscriber;
  if (t == Trigger::Nvtx) {
    for (CUpti_CallbackId id : {CUPTI_CBID_NVTX_nvtxRangePushA, CUPTI_CBID_NVTX_nvtxRangePushEx,
                                CUPTI_CBID_NVTX_nvtxRangePop, CUPTI_CBID_NVTX_nvtxDomainRangePushEx,
                                CUPTI_CBID_NVTX_nvtxDomainRangePop})
      cuptiEnableCallback(enable, sub, CUPTI_CB_DOMAIN_NVTX, id);
  } else if (t == Trigger::ProfilerApi) {
    cuptiEnableCallback(enable, sub, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000);
    cuptiEnableCallback(enable, sub, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000);
  }
}

void set_launch_callbacks(bool on) {
  gate().epoch.fetch_add(1);
  gate().in_flight.store(0);
  const uint32_t enable = on ? 1 : 0;
  CUpti_SubscriberHandle sub = cupti().subscriber;
  for (CUpti_CallbackId id : kRuntimeLaunches) cuptiEnableCallback(enable, sub, CUPTI_CB_DOMAIN_RUNTIME_API, id);
  for (CUpti_CallbackId id : kDriverLaunches) cuptiEnableCallback(enable, sub, CUPTI_CB_DOMAIN_DRIVER_API, id);
}

void cupti_detach(bool finalize) {
  if (cupti().attachment.load() != Attachment::Attached) return;  // released, or on its way out
  set_trigger_callbacks(Trigger::Nvtx, false);
  set_trigger_callbacks(Trigger::ProfilerApi, false);
  set_launch_callbacks(false);
  activities_disable();
  if (finalize) {
    cupti_release();
    return;
  }
  activities_flush();
  cuptiUnsubscribe(cupti().subscriber);  // lets another tool (e.g. torch.profiler) subscribe
}

uint64_t cupti_timestamp() {
  uint64_t ts = 0;
  cuptiGetTimestamp(&ts);
  return ts;
}

void drain_records(const std::function<void(const collector::Record&)>& fn) {
  Cupti& c = cupti();
  // The per-API switches can only follow the kind, so other threads' calls in between are
  // recorded: they are left out here, before decoding (which looks up the API's name).
  const uint8_t off = c.runtime_off.load();
  const auto left_out = [&](const CUpti_Activity& rec) {
    if (rec.kind != CUPTI_ACTIVITY_KIND_RUNTIME) return false;
    const uint32_t cbid = reinterpret_cast<const CUpti_ActivityAPI&>(rec).cbid;
    return cbid < c.runtime_class.size() && (c.runtime_class[cbid] & off) != 0;
  };
  c.pool.drain([&](uint8_t* buffer, size_t valid) {
    CUpti_Activity* rec = nullptr;
    collector::Record r;
    while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS)
      if (!left_out(*rec) && collector::decode_activity(*rec, api_name, r)) fn(r);
  });
}

void collect_dropped() { count_dropped(nullptr, 0); }  // NULL context: the global queue

void discard_records() {
  cupti().pool.drain([](uint8_t*, size_t) {});
}

uint64_t pool_exhausted() { return cupti().pool.exhausted(); }

}  // namespace strata::agent
