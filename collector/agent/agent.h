// Internals of libstrata_agent.so shared by its units: the recording state machine that
// CUPTI callbacks and the control thread both drive, and the CUPTI layer's entry points.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "../protocol/kinds.h"
#include "core/base/status.h"
#include "../trace/records.h"

namespace strata::agent {

// Transitions are made with compare-exchange so exactly one thread owns each step.
// Starting and Disabling are held only while activities are being switched, so the
// control thread never flushes a half-enabled or half-disabled recording.
enum class State : int { Dormant, Armed, Starting, Recording, Disabling, Stopping, Detached };
const char* state_name(State s);

enum class Trigger : int { None, Nvtx, ProfilerApi };

struct Shared {
  std::atomic<State> state{State::Dormant};
  std::atomic<Trigger> trigger{Trigger::None};
  std::atomic<uint32_t> iterations_target{0};
  std::atomic<uint32_t> iterations_done{0};
  std::atomic<uint64_t> cupti_dropped{0};  // reported by CUPTI per completed buffer
  std::atomic<uint32_t> kinds{collector::kDefaultKinds};  // what to record; set while Dormant
  // NVTX iteration pattern: a string the control thread never changes or frees once published.
  std::atomic<const char*> pattern{nullptr};
  // --kernels: which launches --metrics profiles; published like `pattern`.
  std::atomic<const char*> kernel_glob{nullptr};
  // The NVTX range that started a triggered recording: CUPTI recorded only its end, so
  // the control thread adds its start. Written before `trigger_range_ready` is set.
  uint64_t trigger_range_ts = 0;
  uint32_t trigger_range_tid = 0;
  char trigger_range_name[128] = {};
  std::atomic<bool> trigger_range_ready{false};
  int wake_fd = -1;        // eventfd: callbacks wake the control thread
};
Shared& shared();
void wake_control();

// CUPTI layer (cupti_layer.cpp).
Status cupti_attach();  // subscribe and register buffer callbacks
bool activities_enable();               // the recorded kinds, noisy APIs filtered
void activities_disable();
void activities_flush();                // forced: returns partly filled buffers too
void set_trigger_callbacks(Trigger t, bool on);
// The kernel-launch API callbacks that --metrics profiles from (range_profiler.h).
void set_launch_callbacks(bool on);
// Called by a switch of the recording (state Starting or Disabling): waits, bounded, for the
// kernel launches in flight, so each launch is profiled exactly when its kernel is recorded.
void wait_for_launches();
// Between recordings CUPTI is taken out of the job (cuptiFinalize): once activities have
// been on it keeps slowing every launch. cuptiFinalize belongs at a CUDA call's exit, so
// cupti_release only asks for it and the job's next CUDA call does it.
void cupti_release();
// Before a recording: cancels a pending release or subscribes again.
Status cupti_acquire();
// At exit: a pending release is dropped, so CUPTI is never finalized inside the CUDA
// calls of the job's own teardown.
void cupti_keep();
const char* cupti_attachment();  // "attached", "releasing", "released"
// `finalize`: release as above (the unsubscribe comes with it); else unsubscribe now.
void cupti_detach(bool finalize);
uint64_t cupti_timestamp();
// Decodes completed buffers, oldest first.
void drain_records(const std::function<void(const collector::Record&)>& fn);
// Adds the drops CUPTI counted since the last completed buffer (after the final flush).
void collect_dropped();
// Frees completed buffers unread: between recordings, when CUPTI may be gone.
void discard_records();
uint64_t pool_exhausted();

// Devices as the driver reports them (device_info.cpp); empty when unavailable.
std::vector<collector::DeviceRecord> query_devices();

// Control thread (control.cpp). `record_request`: a "start" line (STRATA_RECORD) run before
// the thread starts, or null.
Status control_start(const char* record_request);
// At the job's exit: the control thread finishes a recording; this waits for it, bounded.
void control_at_exit();
void control_after_fork_child();
// "strata agent: TEXT" on stderr; a stderr nobody reads any more never signals the job.
void agent_log(const std::string& text);

}  // namespace strata::agent
