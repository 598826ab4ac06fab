// CUPTI's Range Profiling API (CUDA 12.6+: cupti_range_profiler.h, cupti_profiler_host.h) around
// the job's kernel launches. The host object turns the metric names into a config image (which
// counters, how many passes); the range profiler, enabled on the launch's context, runs each
// matching launch in kernel replay (CUPTI replays the kernel once per pass inside the launch call)
// as one auto range: Start at the launch's entry, Stop, DecodeData and EvaluateToGpuValues at its
// exit. The values go to the control thread through a single-producer ring.
//
// Launches are profiled one at a time: the thread that holds `busy` owns the profiler; a matching
// launch on another thread meanwhile is skipped and counted, never waited for. Any failing call
// turns metrics off for the rest of the recording (the recording goes on; the trace says why).
#include "range_profiler.h"

#include <fnmatch.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <thread>

#include "../protocol/metrics.h"
#include "agent.h"

#if __has_include(<cupti_range_profiler.h>)
#include <cupti_profiler_host.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>
#define STRATA_RANGE_PROFILER 1
#endif

namespace strata::agent {

namespace {

using collector::kMaxMetrics;

// Counters read at a launch's exit, waiting for the control thread.
struct Slot {
  uint32_t correlation = 0;
  uint32_t device = 0;
  uint64_t launched = 0;
  double values[kMaxMetrics] = {};
  char kernel[256] = {};
};
constexpr size_t kSlots = 1024;  // at the rate kernel replay allows, far more than a drain period holds

enum class Status : int { Off, NeedsHostSetup, Ready, Failed };

struct Profiler {
  std::atomic<Status> status{Status::Off};
  std::atomic<bool> busy{false};  // held by the one thread using the objects below
  std::vector<std::string> metrics;
  std::vector<const char*> metric_names;
#ifdef STRATA_RANGE_PROFILER
  CUpti_Profiler_Host_Object* host = nullptr;
  CUpti_RangeProfiler_Object* object = nullptr;
#endif
  bool profiler_initialized = false;
  std::vector<uint8_t> config;
  std::unique_ptr<uint8_t[]> counter_data;
  size_t counter_data_bytes = 0;
  size_t ranges_in_image = 0;
  CUcontext context = nullptr;
  uint32_t device = 0;
  uint32_t correlation = 0;  // of the launch being profiled
  char failure[512] = {};    // written once, before status turns Failed
  std::atomic<uint64_t> profiled{0}, skipped{0};
  // The ring: written by the `busy` holder, read by the control thread.
  std::unique_ptr<Slot[]> slots;
  std::atomic<uint64_t> head{0}, tail{0};
};
Profiler& profiler() {
  static Profiler* p = new Profiler;  // never destroyed: callbacks may fire during exit
  return *p;
}

#ifdef STRATA_RANGE_PROFILER

// The launch this thread is profiling (Start done at its entry); 0: none. Nested launch APIs
// (the runtime calling the driver) belong to the outer one.
thread_local uint32_t t_profiling = 0;

bool try_lock(Profiler& p) { return !p.busy.exchange(true, std::memory_order_acquire); }
void unlock(Profiler& p) { p.busy.store(false, std::memory_order_release); }
// Control thread only: waits for the launch being profiled (kernel replay takes what it takes).
void lock(Profiler& p) {
  while (!try_lock(p)) std::this_thread::yield();
}

constexpr size_t kRangesPerImage = 64;  // the counter data image is initialized again when full

std::string result_text(CUptiResult r) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  return s != nullptr ? s : "CUPTI error " + std::to_string(static_cast<int>(r));
}

// Metrics off for the rest of the recording; the first reason is kept. Caller holds `busy`.
bool fail(Profiler& p, const char* call, CUptiResult r) {
  if (p.status.load() == Status::Failed) return false;
  std::snprintf(p.failure, sizeof p.failure, "%s failed (%s)", call, result_text(r).c_str());
  p.status.store(Status::Failed, std::memory_order_release);
  return false;
}

template <class Params>
Params params(size_t size) {
  Params x{};
  x.structSize = size;
  return x;
}
#define STRATA_PARAMS(type) params<type>(type##_STRUCT_SIZE)

void host_teardown(Profiler& p) {
  if (p.host != nullptr) {
    auto d = STRATA_PARAMS(CUpti_Profiler_Host_Deinitialize_Params);
    d.pHostObject = p.host;
    cuptiProfilerHostDeinitialize(&d);
    p.host = nullptr;
  }
  if (p.profiler_initialized) {
    auto d = STRATA_PARAMS(CUpti_Profiler_DeInitialize_Params);
    cuptiProfilerDeInitialize(&d);
    p.profiler_initialized = false;
  }
}

// The config image from the metric names. `bad_metric` is set when CUPTI does not know one.
bool host_setup(Profiler& p, std::string& why, bool& bad_metric) {
  auto init = STRATA_PARAMS(CUpti_Profiler_Initialize_Params);
  CUptiResult r = cuptiProfilerInitialize(&init);
  if (r != CUPTI_SUCCESS) {
    why = "cuptiProfilerInitialize failed (" + result_text(r) + ")";
    return false;
  }
  p.profiler_initialized = true;
  // Device 0's chip: the processes of one job run on GPUs of one kind.
  auto chip = STRATA_PARAMS(CUpti_Device_GetChipName_Params);
  chip.deviceIndex = 0;
  if ((r = cuptiDeviceGetChipName(&chip)) != CUPTI_SUCCESS || chip.pChipName == nullptr) {
    why = "cuptiDeviceGetChipName failed (" + result_text(r) + ")";
    return false;
  }
  auto host = STRATA_PARAMS(CUpti_Profiler_Host_Initialize_Params);
  host.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  host.pChipName = chip.pChipName;
  if ((r = cuptiProfilerHostInitialize(&host)) != CUPTI_SUCCESS) {
    why = "cuptiProfilerHostInitialize failed for chip " + std::string(chip.pChipName) + " (" + result_text(r) + ")";
    return false;
  }
  p.host = host.pHostObject;
  for (const char*& name : p.metric_names) {  // one at a time, so an unknown one is named
    auto add = STRATA_PARAMS(CUpti_Profiler_Host_ConfigAddMetrics_Params);
    add.pHostObject = p.host;
    add.ppMetricNames = &name;
    add.numMetrics = 1;
    if ((r = cuptiProfilerHostConfigAddMetrics(&add)) != CUPTI_SUCCESS) {
      bad_metric = r == CUPTI_ERROR_INVALID_METRIC_NAME;
      why = bad_metric ? "unknown metric " + std::string(name) + " on " + chip.pChipName + " (CUPTI: " + result_text(r) + ")"
                       : "cuptiProfilerHostConfigAddMetrics failed for " + std::string(name) + " (" + result_text(r) + ")";
      return false;
    }
  }
  auto size = STRATA_PARAMS(CUpti_Profiler_Host_GetConfigImageSize_Params);
  size.pHostObject = p.host;
  if ((r = cuptiProfilerHostGetConfigImageSize(&size)) != CUPTI_SUCCESS) {
    why = "cuptiProfilerHostGetConfigImageSize failed (" + result_text(r) + ")";
    return false;
  }
  p.config.assign(size.configImageSize, 0);
  auto image = STRATA_PARAMS(CUpti_Profiler_Host_GetConfigImage_Params);
  image.pHostObject = p.host;
  image.configImageSize = p.config.size();
  image.pConfigImage = p.config.data();
  if ((r = cuptiProfilerHostGetConfigImage(&image)) != CUPTI_SUCCESS) {
    why = "cuptiProfilerHostGetConfigImage failed (" + result_text(r) + ")";
    return false;
  }
  return true;
}

// An empty counter data image, and the config that points the profiler at it.
bool reset_image(Profiler& p) {
  auto init = STRATA_PARAMS(CUpti_RangeProfiler_CounterDataImage_Initialize_Params);
  init.pRangeProfilerObject = p.object;
  init.counterDataSize = p.counter_data_bytes;
  init.pCounterData = p.counter_data.get();
  if (CUptiResult r = cuptiRangeProfilerCounterDataImageInitialize(&init); r != CUPTI_SUCCESS)
    return fail(p, "cuptiRangeProfilerCounterDataImageInitialize", r);
  auto config = STRATA_PARAMS(CUpti_RangeProfiler_SetConfig_Params);
  config.pRangeProfilerObject = p.object;
  config.configSize = p.config.size();
  config.pConfig = p.config.data();
  config.counterDataImageSize = p.counter_data_bytes;
  config.pCounterDataImage = p.counter_data.get();
  config.range = CUPTI_AutoRange;
  config.replayMode = CUPTI_KernelReplay;
  config.maxRangesPerPass = kRangesPerImage;
  config.numNestingLevels = 1;  // auto range: one level (cupti_range_profiler.h)
  config.minNestingLevel = 1;
  config.passIndex = 0;
  config.targetNestingLevel = 1;
  if (CUptiResult r = cuptiRangeProfilerSetConfig(&config); r != CUPTI_SUCCESS)
    return fail(p, "cuptiRangeProfilerSetConfig", r);
  p.ranges_in_image = 0;
  return true;
}

// The range profiler on the first profiled launch's context, with a counter data image.
bool enable(Profiler& p, CUcontext ctx) {
  auto en = STRATA_PARAMS(CUpti_RangeProfiler_Enable_Params);
  en.ctx = ctx;
  if (CUptiResult r = cuptiRangeProfilerEnable(&en); r != CUPTI_SUCCESS) return fail(p, "cuptiRangeProfilerEnable", r);
  p.object = en.pRangeProfilerObject;
  p.context = ctx;
  if (CUptiResult r = cuptiGetDeviceId(ctx, &p.device); r != CUPTI_SUCCESS) return fail(p, "cuptiGetDeviceId", r);
  auto size = STRATA_PARAMS(CUpti_RangeProfiler_GetCounterDataSize_Params);
  size.pRangeProfilerObject = p.object;
  size.pMetricNames = p.metric_names.data();
  size.numMetrics = p.metric_names.size();
  size.maxNumOfRanges = kRangesPerImage;
  size.maxNumRangeTreeNodes = kRangesPerImage;
  if (CUptiResult r = cuptiRangeProfilerGetCounterDataSize(&size); r != CUPTI_SUCCESS)
    return fail(p, "cuptiRangeProfilerGetCounterDataSize", r);
  p.counter_data.reset(new (std::nothrow) uint8_t[size.counterDataSize]);
  if (p.counter_data == nullptr) return fail(p, "allocating the counter data image", CUPTI_ERROR_OUT_OF_MEMORY);
  p.counter_data_bytes = size.counterDataSize;
  return reset_image(p);
}

// At the launch's entry, `busy` held: Start, after whatever setup the first launch needs.
bool begin(Profiler& p, const CUpti_CallbackData& data) {
  if (p.status.load() == Status::NeedsHostSetup) {
    std::string why;
    bool bad_metric = false;
    if (!host_setup(p, why, bad_metric)) {
      std::snprintf(p.failure, sizeof p.failure, "%s", why.c_str());
      p.status.store(Status::Failed, std::memory_order_release);
      return false;
    }
    p.status.store(Status::Ready);
  }
  if (p.status.load() != Status::Ready) return false;
  if (p.object == nullptr && !enable(p, data.context)) return false;
  if (data.context != p.context) {  // one context per recording: the first profiled launch's
    p.skipped.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  if (p.ranges_in_image >= kRangesPerImage && !reset_image(p)) return false;
  auto start = STRATA_PARAMS(CUpti_RangeProfiler_Start_Params);
  start.pRangeProfilerObject = p.object;
  if (CUptiResult r = cuptiRangeProfilerStart(&start); r != CUPTI_SUCCESS) return fail(p, "cuptiRangeProfilerStart", r);
  return true;
}

// At the launch's exit: Stop, decode, and the values of the range just made into the ring.
void end(Profiler& p, const CUpti_CallbackData& data) {
  auto stop = STRATA_PARAMS(CUpti_RangeProfiler_Stop_Params);
  stop.pRangeProfilerObject = p.object;
  if (CUptiResult r = cuptiRangeProfilerStop(&stop); r != CUPTI_SUCCESS) {
    fail(p, "cuptiRangeProfilerStop", r);
    return;
  }
  if (stop.isAllPassSubmitted == 0) {  // kernel replay makes every pass inside the launch
    fail(p, "cuptiRangeProfilerStop: not every pass was submitted in kernel replay", CUPTI_ERROR_UNKNOWN);
    return;
  }
  auto decode = STRATA_PARAMS(CUpti_RangeProfiler_DecodeData_Params);
  decode.pRangeProfilerObject = p.object;
  if (CUptiResult r = cuptiRangeProfilerDecodeData(&decode); r != CUPTI_SUCCESS) {
    fail(p, "cuptiRangeProfilerDecodeData", r);
    return;
  }
  auto info = STRATA_PARAMS(CUpti_RangeProfiler_GetCounterDataInfo_Params);
  info.pCounterDataImage = p.counter_data.get();
  info.counterDataImageSize = p.counter_data_bytes;
  if (CUptiResult r = cuptiRangeProfilerGetCounterDataInfo(&info); r != CUPTI_SUCCESS) {
    fail(p, "cuptiRangeProfilerGetCounterDataInfo", r);
    return;
  }
  if (info.numTotalRanges == 0 || info.numTotalRanges <= p.ranges_in_image) {  // this launch made no range
    fail(p, "cuptiRangeProfilerDecodeData: the launch made no range", CUPTI_ERROR_UNKNOWN);
    return;
  }
  p.ranges_in_image = info.numTotalRanges;
  const uint64_t head = p.head.load(std::memory_order_relaxed);
  if (head - p.tail.load(std::memory_order_acquire) >= kSlots) {  // the control thread is behind
    p.skipped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  Slot& s = p.slots[head % kSlots];
  auto eval = STRATA_PARAMS(CUpti_Profiler_Host_EvaluateToGpuValues_Params);
  eval.pHostObject = p.host;
  eval.pCounterDataImage = p.counter_data.get();
  eval.counterDataImageSize = p.counter_data_bytes;
  eval.rangeIndex = info.numTotalRanges - 1;  // the newest: the image may hold earlier launches' ranges
  eval.ppMetricNames = p.metric_names.data();
  eval.numMetrics = p.metric_names.size();
  eval.pMetricValues = s.values;
  if (CUptiResult r = cuptiProfilerHostEvaluateToGpuValues(&eval); r != CUPTI_SUCCESS) {
    fail(p, "cuptiProfilerHostEvaluateToGpuValues", r);
    return;
  }
  s.correlation = data.correlationId;
  s.device = p.device;
  s.launched = cupti_timestamp();
  std::snprintf(s.kernel, sizeof s.kernel, "%s", data.symbolName);
  p.head.store(head + 1, std::memory_order_release);
  p.profiled.fetch_add(1, std::memory_order_relaxed);
}

void disable(Profiler& p) {
  if (p.object == nullptr) return;
  auto d = STRATA_PARAMS(CUpti_RangeProfiler_Disable_Params);
  d.pRangeProfilerObject = p.object;
  cuptiRangeProfilerDisable(&d);
  p.object = nullptr;
  p.context = nullptr;
}

#endif  // STRATA_RANGE_PROFILER

}  // namespace

MetricsSetup metrics_prepare(const std::vector<std::string>& metrics, bool defer_host_setup, std::string& why) {
#ifndef STRATA_RANGE_PROFILER
  (void)metrics;
  (void)defer_host_setup;
  why = "this agent was built without CUPTI's range profiler (CUDA 12.6 or later): --metrics is unavailable";
  return MetricsSetup::BadRequest;
#else
  Profiler& p = profiler();
  lock(p);  // a launch of the previous recording may still be leaving
  p.metrics = metrics;
  p.metric_names.clear();
  for (const std::string& m : p.metrics) p.metric_names.push_back(m.c_str());
  if (p.slots == nullptr) p.slots.reset(new (std::nothrow) Slot[kSlots]);
  p.failure[0] = '\0';
  p.profiled.store(0);
  p.skipped.store(0);
  MetricsSetup result = MetricsSetup::Ready;
  bool bad_metric = false;
  if (p.slots == nullptr) {
    why = "cannot allocate the counters' ring";
    result = MetricsSetup::Unavailable;
  } else if (!defer_host_setup && !host_setup(p, why, bad_metric)) {
    host_teardown(p);
    result = bad_metric ? MetricsSetup::BadRequest : MetricsSetup::Unavailable;
  }
  p.status.store(result != MetricsSetup::Ready ? Status::Off
                 : defer_host_setup                ? Status::NeedsHostSetup
                                                   : Status::Ready);
  unlock(p);
  return result;
#endif
}

void metrics_on_launch(const CUpti_CallbackData& data, bool recording) {
#ifdef STRATA_RANGE_PROFILER
  Profiler& p = profiler();
  if (data.callbackSite == CUPTI_API_EXIT) {
    if (t_profiling == 0 || t_profiling != data.correlationId) return;
    t_profiling = 0;
    end(p, data);
    unlock(p);
    return;
  }
  if (t_profiling != 0 || !recording) return;
  const Status st = p.status.load(std::memory_order_relaxed);
  if (st != Status::Ready && st != Status::NeedsHostSetup) return;
  const char* glob = shared().kernel_glob.load(std::memory_order_acquire);
  if (glob == nullptr || data.symbolName == nullptr || fnmatch(glob, data.symbolName, 0) != 0) return;
  if (!try_lock(p)) {
    p.skipped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (!begin(p, data)) {
    unlock(p);
    return;
  }
  t_profiling = data.correlationId;  // `busy` stays held until this launch's exit
#else
  (void)data;
  (void)recording;
#endif
}

void metrics_drain(const std::function<void(const collector::KernelCounters&)>& fn) {
  Profiler& p = profiler();
  const uint64_t head = p.head.load(std::memory_order_acquire);
  for (uint64_t t = p.tail.load(std::memory_order_relaxed); t < head; ++t) {
    const Slot& s = p.slots[t % kSlots];
    fn(collector::KernelCounters{s.correlation, s.device, s.launched, s.kernel, s.values});
    p.tail.store(t + 1, std::memory_order_release);
  }
}

std::string metrics_failure() {
  Profiler& p = profiler();
  return p.status.load(std::memory_order_acquire) == Status::Failed ? p.failure : "";
}

const char* metrics_state() {
  switch (profiler().status.load()) {
    case Status::NeedsHostSetup:
    case Status::Ready: return "collecting";
    case Status::Failed: return "failed";
    case Status::Off: break;
  }
  return "off";
}

uint64_t metrics_profiled() { return profiler().profiled.load(std::memory_order_relaxed); }
uint64_t metrics_skipped() { return profiler().skipped.load(std::memory_order_relaxed); }

void metrics_release() {
#ifdef STRATA_RANGE_PROFILER
  Profiler& p = profiler();
  lock(p);
  disable(p);
  host_teardown(p);
  p.config.clear();
  p.counter_data.reset();
  p.status.store(Status::Off);
  unlock(p);
#endif
}

}  // namespace strata::agent
