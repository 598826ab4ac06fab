// The library's entry points. The CUDA driver calls InitializeInjection during cuInit
// when CUDA_INJECTION64_PATH names this library; NVTX calls InitializeInjectionNvtx2
// when NVTX_INJECTION64_PATH names it, and we hand that on to CUPTI's own handler so
// NVTX ranges reach CUPTI's activity records and our iteration callbacks.
#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>

#include <atomic>
#include <cstdlib>

#include "agent.h"

namespace {

void at_exit() { strata::agent::control_at_exit(); }
void after_fork_child() { strata::agent::control_after_fork_child(); }

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  static std::atomic<bool> done{false};
  if (done.exchange(true)) return 1;
  strata::Status st = strata::agent::cupti_attach();
  if (st.is_ok()) st = strata::agent::control_start(std::getenv("STRATA_RECORD"));
  if (!st.is_ok()) {
    strata::agent::agent_log(st.message() + " -- the agent stays off; the job runs on without it");
    return 1;  // never fail the driver's initialization on our account
  }
  std::atexit(at_exit);
  pthread_atfork(nullptr, nullptr, after_fork_child);
  return 1;
}

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(const void* get_export_table) {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&cuptiSubscribe), &info) == 0 || info.dli_fname == nullptr) return 0;
  void* lib = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  if (lib == nullptr) return 0;
  using InitFn = int (*)(const void*);
  auto init = reinterpret_cast<InitFn>(dlsym(lib, "InitializeInjectionNvtx2"));
  return init != nullptr ? init(get_export_table) : 0;  // lib stays loaded: we link it
}
