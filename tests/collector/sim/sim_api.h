// The job side of the CUPTI simulator (libcupti.so.N built from cupti_sim.cpp): simulated
// CUDA runtime and NVTX calls that go through the simulator's callbacks and activity
// records exactly where the real driver and CUPTI would, and the simulator's counters.
// C functions, exported next to the cupti* ones, so a job linking the simulator can call them.
#pragma once

#include <stdint.h>

// Every counter, in the order SIMSTATS prints them.
//   api_calls                        simulated CUDA runtime calls
//   nvtx_calls                       NVTX pushes and pops that reached CUPTI (NVTX injected)
//   records_produced                 activity records the enabled kinds asked for (stored or dropped)
//   records_dropped                  of those, dropped: no buffer (request refused or none registered)
//   kernels_produced, kernels_dropped  the same for CONCURRENT_KERNEL records
//   noisy_records_stored             cudaGetDevice RUNTIME records stored (the agent leaves them out)
//   callbacks_delivered              subscriber callbacks called (all domains)
//   cupti_calls_in_callbacks         CUPTI functions the subscriber called from inside its callbacks
//   nvtx_callbacks_delivered         of those, in the NVTX domain
//   subscribe_calls                  cuptiSubscribe calls that succeeded
//   finalize_calls                   cuptiFinalize calls
//   finalize_in_exit_callback        of those, made inside an API-exit callback on a job thread
//   buffers_outstanding_at_finalize  buffers the client had given that cuptiFinalize never handed back
//   dropped_unread_at_finalize       drops cuptiFinalize discarded before the client asked for them
//   api_calls_since_finalize         reset by cuptiFinalize
//   instrumented_calls_since_finalize  calls with a callback delivered or a record produced; reset too
//   buffers_requested, buffers_refused, buffers_completed  the buffer callbacks' traffic
//   dropped_reported                 sum of what cuptiActivityGetNumDroppedRecords returned
//   flush_all_calls                  cuptiActivityFlushAll calls
//   subscribed_at_end                1 while a subscriber is registered (read when the counters are)
//   kinds_enabled_at_end             activity kinds enabled now (read when the counters are)
//   range_profiler_calls             range profiler, profiler host and profiler target calls (any thread)
//   ranges_decoded                   ranges DecodeData wrote into a counter data image
//   range_profilers_enabled_at_end   range profiler objects enabled and not disabled
#define STRATA_SIM_COUNTERS(X)                                                                        \
  X(api_calls) X(nvtx_calls) X(records_produced) X(records_dropped) X(kernels_produced)              \
  X(kernels_dropped) X(noisy_records_stored) X(callbacks_delivered) X(cupti_calls_in_callbacks)      \
  X(nvtx_callbacks_delivered) X(subscribe_calls)                                                     \
  X(finalize_calls) X(finalize_in_exit_callback) X(buffers_outstanding_at_finalize)                  \
  X(dropped_unread_at_finalize) X(api_calls_since_finalize) X(instrumented_calls_since_finalize)     \
  X(buffers_requested) X(buffers_refused) X(buffers_completed) X(dropped_reported) X(flush_all_calls) \
  X(subscribed_at_end) X(kinds_enabled_at_end) X(range_profiler_calls) X(ranges_decoded)               \
  X(range_profilers_enabled_at_end)

#ifdef __cplusplus
extern "C" {
#endif

typedef struct StrataSimCounters {
#define STRATA_SIM_FIELD(name) uint64_t name;
  STRATA_SIM_COUNTERS(STRATA_SIM_FIELD)
#undef STRATA_SIM_FIELD
} StrataSimCounters;

// cudaLaunchKernel: one kernel of `duration_ns` on `stream`, queued after the stream's previous one.
void strata_sim_cuda_launch_kernel(const char* name, uint32_t stream, uint64_t duration_ns);
// cudaGetDevice: a cheap call the agent filters as noise.
int strata_sim_cuda_get_device(void);
// cudaDeviceSynchronize: waits (sleeps) until every stream's simulated work is done.
void strata_sim_cuda_device_synchronize(void);
void strata_sim_cuda_profiler_start(void);
void strata_sim_cuda_profiler_stop(void);
// nvtxRangePushA / nvtxRangePop: no-ops until NVTX handed CUPTI its export table
// (InitializeInjectionNvtx2), as with the real NVTX.
int strata_sim_nvtx_range_push(const char* message);
int strata_sim_nvtx_range_pop(void);

void strata_sim_read_counters(StrataSimCounters* out);

// The range profiler (range_profiler_sim.cpp): the chip is GH100; a kernel of D ns named K has
// gpu__time_duration.sum = D and, for the i-th (i > 0) of its known metrics
// (smsp__sass_thread_inst_executed_op_{d,f,h}{add,mul,fma}_pred_on.sum in that order from i = 1,
// then dram__bytes_read.sum, dram__bytes_write.sum), D * i * strlen(K); any other name is
// CUPTI_ERROR_INVALID_METRIC_NAME. Fault injection: the `nth_call`-th call (from 1) of the CUPTI
// function named `function` (e.g. "cuptiRangeProfilerDecodeData") returns CUPTI_ERROR_UNKNOWN.
void strata_sim_range_profiler_fail(const char* function, uint64_t nth_call);

#ifdef __cplusplus
}
#endif
