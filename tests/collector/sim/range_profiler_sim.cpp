// The CUPTI simulator's range profiler (cupti_range_profiler.h, cupti_profiler_host.h,
// cupti_profiler_target.h, cupti_target.h): the calls the agent makes for --metrics, with the
// contracts the headers document, checked strictly so the agent's misuse shows in tests:
//   - every params struct has structSize == its *_STRUCT_SIZE and pPriv NULL (else INVALID_PARAMETER);
//   - target calls need cuptiProfilerInitialize first (NOT_INITIALIZED);
//   - a range profiler object goes Enable -> GetCounterDataSize -> CounterDataImageInitialize ->
//     SetConfig -> (Start -> kernels -> Stop -> DecodeData)* -> Disable; Start without SetConfig,
//     Start twice, Stop without Start, DecodeData while started are INVALID_OPERATION;
//   - a metric the chip does not have is INVALID_METRIC_NAME (ConfigAddMetrics, GetCounterDataSize,
//     EvaluateToGpuValues).
// Only what the agent uses is modelled: auto range with kernel replay (one range per kernel
// launched between Start and Stop; every pass made inside the launch, so Stop reports all passes
// submitted). The images are the client's memory, in a layout of our own.
//
// Counter values are deterministic (sim_api.h): gpu__time_duration.sum is the kernel's simulated
// duration D in ns; the metric at index i > 0 of kKnownMetrics is D * i * strlen(kernel name).
#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "sim_api.h"
#include "sim_internal.h"

struct CUpti_Profiler_Host_Object {
  std::vector<int> metrics;  // indices into kKnownMetrics, in the order added
};

struct CUpti_RangeProfiler_Object {
  CUcontext ctx = nullptr;
  std::vector<int> sized_metrics;  // from GetCounterDataSize: what an image it initializes holds
  size_t sized_ranges = 0;
  size_t sized_bytes = 0;
  uint8_t* image = nullptr;        // from SetConfig
  size_t image_bytes = 0;
  size_t max_ranges_per_pass = 0;
  bool configured = false;
  bool started = false;
  std::vector<std::vector<double>> collected;  // ranges made since the last DecodeData
  size_t dropped = 0;
};

namespace {

constexpr const char* kChipName = "GH100";
constexpr const char* kKnownMetrics[] = {
    "gpu__time_duration.sum",
    "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_hmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
};
constexpr size_t kMaxImageMetrics = 32;

// Our config image: magic, count, metric indices.
constexpr uint32_t kConfigMagic = 0x43534d53;  // "SMSC"
// Our counter data image: this header, then capacity x metrics doubles.
constexpr uint32_t kCounterMagic = 0x44534d53;  // "SMSD"
struct CounterHeader {
  uint32_t magic;
  uint32_t metrics;
  uint32_t capacity;
  uint32_t ranges;
  int32_t metric[kMaxImageMetrics];
};

struct RangeSim {
  std::mutex mu;
  bool initialized = false;
  std::vector<std::unique_ptr<CUpti_Profiler_Host_Object>> hosts;
  std::vector<std::unique_ptr<CUpti_RangeProfiler_Object>> objects;  // enabled ones
  std::map<std::string, uint64_t> calls;  // per function, for fault injection
  std::string fail_function;
  uint64_t fail_call = 0;
  std::atomic<uint64_t> api_calls{0}, ranges_decoded{0};
};
RangeSim& rs() {
  static RangeSim* r = new RangeSim;
  return *r;
}

int metric_index(const char* name) {
  if (name == nullptr) return -1;
  for (size_t i = 0; i < std::size(kKnownMetrics); ++i)
    if (std::strcmp(kKnownMetrics[i], name) == 0) return static_cast<int>(i);
  return -1;
}

// Counts the call; CUPTI_SUCCESS, or the injected fault for this call of `function`. Lock held.
CUptiResult enter(RangeSim& r, const char* function) {
  strata_sim::note_cupti_call();
  r.api_calls.fetch_add(1);
  const uint64_t n = ++r.calls[function];
  return r.fail_function == function && r.fail_call == n ? CUPTI_ERROR_UNKNOWN : CUPTI_SUCCESS;
}

template <class Params>
bool well_formed(const Params* p, size_t size) {
  return p != nullptr && p->structSize == size && p->pPriv == nullptr;
}
#define STRATA_CHECK_PARAMS(p, type) \
  if (!well_formed(p, type##_STRUCT_SIZE)) return CUPTI_ERROR_INVALID_PARAMETER

CUpti_RangeProfiler_Object* live_object(RangeSim& r, const CUpti_RangeProfiler_Object* o) {
  for (auto& x : r.objects)
    if (x.get() == o) return x.get();
  return nullptr;
}

CUpti_Profiler_Host_Object* live_host(RangeSim& r, const CUpti_Profiler_Host_Object* h) {
  for (auto& x : r.hosts)
    if (x.get() == h) return x.get();
  return nullptr;
}

const CounterHeader* counter_image(const uint8_t* image, size_t bytes) {
  if (image == nullptr || bytes < sizeof(CounterHeader)) return nullptr;
  const auto* h = reinterpret_cast<const CounterHeader*>(image);
  const size_t need = sizeof(CounterHeader) + size_t{h->capacity} * h->metrics * sizeof(double);
  return h->magic == kCounterMagic && bytes >= need ? h : nullptr;
}

double* range_values(uint8_t* image, const CounterHeader& h, size_t range) {
  return reinterpret_cast<double*>(image + sizeof(CounterHeader)) + range * h.metrics;
}

double metric_value(int metric, const char* kernel, uint64_t duration_ns) {
  const double d = static_cast<double>(duration_ns);
  return metric == 0 ? d : d * metric * static_cast<double>(std::strlen(kernel));
}

}  // namespace

namespace strata_sim {

void range_profiler_kernel_ran(CUcontext ctx, const char* kernel, uint64_t duration_ns) {
  RangeSim& r = rs();
  std::lock_guard<std::mutex> lock(r.mu);
  for (auto& o : r.objects) {
    if (o->ctx != ctx || !o->started) continue;
    if (o->collected.size() >= o->max_ranges_per_pass) {
      ++o->dropped;
      continue;
    }
    const auto* h = reinterpret_cast<const CounterHeader*>(o->image);
    std::vector<double> values;
    for (uint32_t m = 0; m < h->metrics; ++m) values.push_back(metric_value(h->metric[m], kernel, duration_ns));
    o->collected.push_back(std::move(values));
  }
}

void range_profiler_counters(StrataSimCounters& out) {
  RangeSim& r = rs();
  out.range_profiler_calls = r.api_calls.load();
  out.ranges_decoded = r.ranges_decoded.load();
  std::lock_guard<std::mutex> lock(r.mu);
  out.range_profilers_enabled_at_end = r.objects.size();
}

}  // namespace strata_sim

void strata_sim_range_profiler_fail(const char* function, uint64_t nth_call) {
  RangeSim& r = rs();
  std::lock_guard<std::mutex> lock(r.mu);
  r.fail_function = function;
  r.fail_call = nth_call;
}

// ---- cupti_profiler_target.h, cupti_target.h ----

CUptiResult CUPTIAPI cuptiProfilerInitialize(CUpti_Profiler_Initialize_Params* p) {
  RangeSim& r = rs();
  std::lock_guard<std::mutex> lock(r.mu);
  if (CUptiResult e = enter(r, __func__)) return e;
  STRATA_CHECK_PARAMS(p, CUpti_Profiler_Initialize_Params);
  r.initialized = true;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiProfilerDeInitialize(CUpti_Profiler_DeInitialize_Params* p) {
  RangeSim& r = rs();
  std::lock_guard<std::mutex> lock(r.mu);
  if (CUptiResult e = enter(r, __func__)) return e;
  STRATA_CHECK_PARAMS(p, CUpti_Profiler_DeInitialize_Params);
  r.initialized = false;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiDeviceGetChipName(CUpti_Device_GetChipName_Params* p) {
  RangeSim& r = rs();
  std::lock_guard<std::mutex> lock(r.mu);
  if (CUptiResult e = enter(r, __func__)) return e;
  STRATA_CHECK_PARAMS(p, CUpti_Device_GetChipName_Params);
  if (!r.initialized) return CUPTI_ERROR_NOT_INITIALIZED;
  if (p->deviceIndex != 0) return CUPTI_ERROR_INVALID_DEVICE;
  p->pChipName = kChipName;
  return CUPTI_SUCCESS;
}

// ---- cupti_profiler_host.h ----

CUptiResult CUPTIAPI cuptiProfilerHostInitialize(CUpti_Profiler_Host_Initialize_Params* p) {
  RangeSim& r = rs();
  std::lock_guard<std::mutex> lock(r.mu);
  if (CUptiResult e = enter(r, __func__)) return e;
  STRATA_CHECK_PARAMS(p, CUpti_Profiler_Host_Initialize_Params);
  if (p->profilerType != CUPTI_PROFILER_TYPE_RANGE_PROFILER) return CUPTI_ERROR_NOT_SUPPORTED;  // not modelled
  if (p->pChipName == nullptr || std::strcmp(p->pChipName, kChipName) != 0) return CUPTI_ERROR_INVALID_PARAMETER;
  r.hosts.push_back(std::make_unique<CUpti_Profiler_Host_Object>());
  p->pHostObject = r.hosts.back().get();
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiProfilerHostDeinitialize(CUpti_Profiler_Host_Deinitialize_Params* p) {
  RangeSim& r = rs();
  std::lock_guard<std::mutex> lock(r.mu);
  if (CUptiResult e = enter(r, __func__)) return e;
  STRATA_CHECK_PARAMS(p, CUpti_Profiler_Host_Deinitialize_Params);
  auto it = std::find_if(r.hosts.begin(), r.hosts.end(), [&](const auto& h) { return h.get() == p->pHostObject; });
  if (it == r.hosts.end()) return CUPTI_ERROR_INVALID_PARAMETER;
  r.hosts.erase(it);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiProfilerHostConfigAddMetrics(CUpti_Profiler_Host_ConfigAddMetrics_Params* p) {
  RangeSim& r = rs();
  std::lock_guard<std::mutex> lock(r.mu);
  if (CUptiResult e = enter(r, __func__)) return e;
  STRATA_CHECK_PARAMS(p, CUpti_Profiler_Host_ConfigAddMetrics_Params);
  CUpti_Profiler_Host_Object* h = live_host(r, p->pHostObject);
  if (h == nullptr || p->ppMetricNames == nullptr || p->numMetrics == 0) return CUPTI_ERROR_INVALID_PARAMETER;
  std::vector<int> add;
  for (size_t i = 0; i < p->numMetrics; ++i) {
    const int m = metric_index(p->ppMetricNames[i]);
    if (m < 0) return CUPTI_ERROR_INVALID_METRIC_NAME;  // nothing added
    add.push_back(m);
  }
  for (int m : add)
    if (std::find(h->metrics.begin(), h->metrics.end(), m) == h->metrics.end()) h->metrics.push_back(m);
  if (h->metrics.size() > kMaxImageMetrics) return CUPTI_ERROR_INVALID_PARAMETER;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiProfilerHostGetConfigImageSize(CUpti_Profiler_Host_GetConfigImageSize_Params* p) {
  RangeSim& r = rs();
  std::lock_guard<std::mutex> lock(r.mu);
  if (CUptiResult e = enter(r, __func__)) return e;
  STRATA_CHECK_PARAMS(p, CUpti_Profiler_Host_GetConfigImageSize_Params);
  const CUpti_Profiler_Host_Object* h = live_host(r, p->pHostObject);
  if (h == nullptr || h->metrics.empty()) return CUPTI_ERROR_INVALID_PARAMETER;
  p->configImageSize = 2 * sizeof(uint32_t) + h->metrics.size() * sizeof(int32_t);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiProfilerHostGetConfigImage(CUpti_Profiler_Host_GetConfigImage_Params* p) {
  RangeSim& r = rs();
  std::lock_guard<std::mutex> lock(r.mu);
  if (CUptiResult e = enter(r, __func__)) return e;
  STRATA_CHECK_PARAMS(p, CUpti_Profiler_Host_GetConfigImage_Params);
  const CUpti_Profiler_Host_Object* h = live_host(r, p->pHostObject);
  const size_t need = 2 * sizeof(uint32_t) + (h != nullptr ? h->metrics.size() : 0) * sizeof(int32_t);
  if (h == nullptr || h->metrics.empty() || p->pConfigImage == nullptr || p->configImageSize < need)
    return CUPTI_ERROR_INVALID_PARAMETER;
  const uint32_t head[2] = {kConfigMagic, static_cast<uint32_t>(h->metrics.size())};
  std::memcpy(p->pConfigImage, head, sizeof head);
  for (size_t i = 0; i < h->metrics.size(); ++i) {
    const int32_t m = h->metrics[i];
    std::memcpy(p->pConfigImage + sizeof head + i * sizeof m, &m, sizeof m);
  }
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiProfilerHostEvaluateToGpuValues(CUpti_Profiler_Host_EvaluateToGpuValues_Params* p) {
  RangeSim& r = rs();
  std::lock_guard<std::mutex> lock(r.mu);
  if (CUptiResult e = enter(r, __func__)) return e;
  STRATA_CHECK_PARAMS(p, CUpti_Profiler_Host_EvaluateToGpuValues_Params);
  const CounterHeader* h = counter_image(p->pCounterDataImage, p->counterDataImageSize);
  if (live_host(r, p->pHostObject) == nullptr || h == nullptr || p->rangeIndex >= h->ranges ||
      p->ppMetricNames == nullptr || p->pMetricValues == nullptr)
    return CUPTI_ERROR_INVALID_PARAMETER;
  const auto* values = reinterpret_cast<const double*>(p->pCounterDataImage + sizeof(CounterHeader)) +
                       p->rangeIndex * h->metrics;
  for (size_t i = 0; i < p->numMetrics; ++i) {
    const int m = metric_index(p->ppMetricNames[i]);
    if (m < 0) return CUPTI_ERROR_INVALID_METRIC_NAME;
    const int32_t* end = h->metric + h->metrics;
    const int32_t* at = std::find(h->metric, end, m);
    if (at == end) return CUPTI_ERROR_INVALID_PARAMETER;  // not collected in this image
    p->pMetricValues[i] = values[at - h->metric];
  }
  return CUPTI_SUCCESS;
}

// ---- cupti_range_profiler.h ----

CUptiResult CUPTIAPI cuptiRangeProfilerEnable(CUpti_RangeProfiler_Enable_Params* p) {
  RangeSim& r = rs();
  std::lock_guard<std::mutex> lock(r.mu);
  if (CUptiResult e = enter(r, __func__)) return e;
  STRATA_CHECK_PARAMS(p, CUpti_RangeProfiler_Enable_Params);
  if (!r.initialized) return CUPTI_ERROR_NOT_INITIALIZED;
  if (p->ctx == nullptr || p->ctx != strata_sim::context()) return CUPTI_ERROR_INVALID_PARAMETER;
  for (const auto& o : r.objects)
    if (o->ctx == p->ctx) return CUPTI_ERROR_INVALID_OPERATION;  // already enabled on this context
  r.objects.push_back(std::make_unique<CUpti_RangeProfiler_Object>());
  r.objects.back()->ctx = p->ctx;
  p->pRangeProfilerObject = r.objects.back().get();
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiRangeProfilerDisable(CUpti_RangeProfiler_Disable_Params* p) {
  RangeSim& r = rs();
  std::lock_guard<std::mutex> lock(r.mu);
  if (CUptiResult e = enter(r, __func__)) return e;
  STRATA_CHECK_PARAMS(p, CUpti_RangeProfiler_Disable_Params);
  auto it = std::find_if(r.objects.begin(), r.objects.end(),
                         [&](const auto& o) { return o.get() == p->pRangeProfilerObject; });
  if (it == r.objects.end()) return CUPTI_ERROR_INVALID_PARAMETER;
  r.objects.erase(it);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiRangeProfilerGetCounterDataSize(CUpti_RangeProfiler_GetCounterDataSize_Params* p) {
  RangeSim& r = rs();
  std::lock_guard<std::mutex> lock(r.mu);
  if (CUptiResult e = enter(r, __func__)) return e;
  STRATA_CHECK_PARAMS(p, CUpti_RangeProfiler_GetCounterDataSize_Params);
  CUpti_RangeProfiler_Object* o = live_object(r, p->pRangeProfilerObject);
  if (o == nullptr) return CUPTI_ERROR_INVALID_OPERATION;  // without enabling the range profiler
  if (p->pMetricNames == nullptr || p->numMetrics == 0 || p->numMetrics > kMaxImageMetrics ||
      p->maxNumOfRanges == 0 || p->maxNumRangeTreeNodes < p->maxNumOfRanges)
    return CUPTI_ERROR_INVALID_PARAMETER;
  std::vector<int> metrics;
  for (size_t i = 0; i < p->numMetrics; ++i) {
    const int m = metric_index(p->pMetricNames[i]);
    if (m < 0) return CUPTI_ERROR_INVALID_METRIC_NAME;
    metrics.push_back(m);
  }
  o->sized_metrics = std::move(metrics);
  o->sized_ranges = p->maxNumOfRanges;
  o->sized_bytes = sizeof(CounterHeader) + p->maxNumOfRanges * p->numMetrics * sizeof(double);
  p->counterDataSize = o->sized_bytes;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiRangeProfilerCounterDataImageInitialize(
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params* p) {
  RangeSim& r = rs();
  std::lock_guard<std::mutex> lock(r.mu);
  if (CUptiResult e = enter(r, __func__)) return e;
  STRATA_CHECK_PARAMS(p, CUpti_RangeProfiler_CounterDataImage_Initialize_Params);
  const CUpti_RangeProfiler_Object* o = live_object(r, p->pRangeProfilerObject);
  if (o == nullptr) return CUPTI_ERROR_INVALID_OPERATION;
  if (o->sized_bytes == 0 || p->pCounterData == nullptr || p->counterDataSize != o->sized_bytes)
    return CUPTI_ERROR_INVALID_PARAMETER;  // the size GetCounterDataSize gave
  CounterHeader h{};
  h.magic = kCounterMagic;
  h.metrics = static_cast<uint32_t>(o->sized_metrics.size());
  h.capacity = static_cast<uint32_t>(o->sized_ranges);
  std::copy(o->sized_metrics.begin(), o->sized_metrics.end(), h.metric);
  std::memset(p->pCounterData, 0, p->counterDataSize);
  std::memcpy(p->pCounterData, &h, sizeof h);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiRangeProfilerSetConfig(CUpti_RangeProfiler_SetConfig_Params* p) {
  RangeSim& r = rs();
  std::lock_guard<std::mutex> lock(r.mu);
  if (CUptiResult e = enter(r, __func__)) return e;
  STRATA_CHECK_PARAMS(p, CUpti_RangeProfiler_SetConfig_Params);
  CUpti_RangeProfiler_Object* o = live_object(r, p->pRangeProfilerObject);
  if (o == nullptr || o->started) return CUPTI_ERROR_INVALID_OPERATION;
  const CounterHeader* h = counter_image(p->pCounterDataImage, p->counterDataImageSize);
  uint32_t head[2] = {};
  if (p->pConfig != nullptr && p->configSize >= sizeof head) std::memcpy(head, p->pConfig, sizeof head);
  if (h == nullptr || head[0] != kConfigMagic || p->configSize != sizeof head + head[1] * sizeof(int32_t) ||
      p->maxRangesPerPass == 0 || p->range <= CUPTI_Range_INVALID || p->range >= CUPTI_Range_COUNT ||
      p->replayMode <= CUPTI_Replay_INVALID || p->replayMode >= CUPTI_Replay_COUNT ||
      (p->range == CUPTI_AutoRange && p->numNestingLevels != 1))
    return CUPTI_ERROR_INVALID_PARAMETER;
  // The config's metrics must be the ones the counter data image was sized for.
  std::vector<int> config(head[1]);
  std::memcpy(config.data(), p->pConfig + sizeof head, config.size() * sizeof(int32_t));
  std::vector<int> image(h->metric, h->metric + h->metrics);
  std::sort(config.begin(), config.end());
  std::sort(image.begin(), image.end());
  if (config != image) return CUPTI_ERROR_INVALID_PARAMETER;
  if (p->range != CUPTI_AutoRange || p->replayMode != CUPTI_KernelReplay) return CUPTI_ERROR_NOT_SUPPORTED;  // not modelled
  o->image = p->pCounterDataImage;
  o->image_bytes = p->counterDataImageSize;
  o->max_ranges_per_pass = p->maxRangesPerPass;
  o->configured = true;
  o->collected.clear();
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiRangeProfilerStart(CUpti_RangeProfiler_Start_Params* p) {
  RangeSim& r = rs();
  std::lock_guard<std::mutex> lock(r.mu);
  if (CUptiResult e = enter(r, __func__)) return e;
  STRATA_CHECK_PARAMS(p, CUpti_RangeProfiler_Start_Params);
  CUpti_RangeProfiler_Object* o = live_object(r, p->pRangeProfilerObject);
  if (o == nullptr || !o->configured || o->started) return CUPTI_ERROR_INVALID_OPERATION;
  o->started = true;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiRangeProfilerStop(CUpti_RangeProfiler_Stop_Params* p) {
  RangeSim& r = rs();
  std::lock_guard<std::mutex> lock(r.mu);
  if (CUptiResult e = enter(r, __func__)) return e;
  STRATA_CHECK_PARAMS(p, CUpti_RangeProfiler_Stop_Params);
  CUpti_RangeProfiler_Object* o = live_object(r, p->pRangeProfilerObject);
  if (o == nullptr || !o->started) return CUPTI_ERROR_INVALID_OPERATION;
  o->started = false;
  p->passIndex = 0;
  p->targetNestingLevel = 1;
  p->isAllPassSubmitted = 1;  // kernel replay: every pass ran inside the launch
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiRangeProfilerDecodeData(CUpti_RangeProfiler_DecodeData_Params* p) {
  RangeSim& r = rs();
  std::lock_guard<std::mutex> lock(r.mu);
  if (CUptiResult e = enter(r, __func__)) return e;
  STRATA_CHECK_PARAMS(p, CUpti_RangeProfiler_DecodeData_Params);
  CUpti_RangeProfiler_Object* o = live_object(r, p->pRangeProfilerObject);
  if (o == nullptr || !o->configured || o->started) return CUPTI_ERROR_INVALID_OPERATION;  // after Stop
  auto* h = reinterpret_cast<CounterHeader*>(o->image);
  size_t dropped = o->dropped;
  for (const std::vector<double>& values : o->collected) {
    if (h->ranges >= h->capacity) {
      ++dropped;
      continue;
    }
    std::copy(values.begin(), values.end(), range_values(o->image, *h, h->ranges));
    ++h->ranges;
    r.ranges_decoded.fetch_add(1);
  }
  o->collected.clear();
  o->dropped = 0;
  p->numOfRangeDropped = dropped;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiRangeProfilerGetCounterDataInfo(CUpti_RangeProfiler_GetCounterDataInfo_Params* p) {
  RangeSim& r = rs();
  std::lock_guard<std::mutex> lock(r.mu);
  if (CUptiResult e = enter(r, __func__)) return e;
  STRATA_CHECK_PARAMS(p, CUpti_RangeProfiler_GetCounterDataInfo_Params);
  const CounterHeader* h = counter_image(p->pCounterDataImage, p->counterDataImageSize);
  if (h == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  p->numTotalRanges = h->ranges;
  return CUPTI_SUCCESS;
}
