// strata_sim_job: a simulated CUDA job, to run libstrata_agent.so without a GPU. It links the
// CUPTI simulator (built under libcupti's SONAME, so the agent's CUPTI calls land there) and a
// stand-in for the driver's device queries (libcuda.so.1, cuda_sim.cpp), loads the agent and
// calls InitializeInjection as the CUDA driver does inside cuInit, hands NVTX's export table to
// NVTX_INJECTION64_PATH as NVTX does, then runs threads of simulated CUDA calls:
//
//   strata_sim_job [--agent PATH] [--threads T] [--iterations N] [--kernels K] [--sleep-us U]
//                  [--range NAME] [--lockstep-ms P] [--profiler-range] [--seconds S] [--kernel-ns D]
//                  [--idle-ms M] [--hold-fds-ms M] [--file-size-limit B] [--broken-stderr] [--note TEXT]
//                  [--kernel-names A,B,...] [--range-fault FUNCTION:N]
//
// Without --agent it loads CUDA_INJECTION64_PATH, as the driver does (`strata record` sets it).
//
// Each thread t runs N iterations (default 10; with --seconds, until S seconds passed, and N
// only if given): K x (cudaGetDevice + a kernel of D ns on stream 1+t; the kernels are named
// sim_kernel_0..K-1, or A, B, ... with --kernel-names, which sets K), cudaDeviceSynchronize,
// then sleeps U us. Thread 0 wraps each iteration in NVTX range NAME (--range) and in
// cudaProfilerStart/Stop (--profiler-range). --lockstep-ms P plays a rank of a job in lockstep
// with the others: thread 0 begins each iteration at the next multiple of P ms of the machine's
// monotonic clock and names its range "NAME SLOT" (SLOT: that multiple), the same on every rank. Prints "ready PID" once the agent is initialized
// and, after the threads joined, "idle" and M ms without a CUDA call (--idle-ms), then
// "SIMSTATS {json}" with the simulator's counters.
//
// Faults a job can bring on itself, for the agent to survive: --hold-fds-ms opens files until
// none is left (EMFILE, under a limit lowered to 256) while the threads run, prints "fds held",
// keeps them M ms and prints "fds released"; --file-size-limit sets RLIMIT_FSIZE (a write past it fails, with SIGXFSZ);
// --broken-stderr makes stderr a pipe nobody reads (a write to it raises SIGPIPE); --range-fault
// makes the N-th call of a range-profiler function fail (strata_sim_range_profiler_fail). --note
// only makes the command line longer.
#include <cuda.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "sim_api.h"

namespace {

struct Options {
  std::string agent;
  int threads = 1;
  uint64_t iterations = 0;  // 0: not given
  int kernels = 5;
  uint64_t sleep_us = 0;
  std::string range;
  uint64_t lockstep_ms = 0;
  bool profiler_range = false;
  double seconds = 0;
  uint64_t kernel_ns = 3000;
  uint64_t idle_ms = 0;
  uint64_t hold_fds_ms = 0;
  uint64_t file_size_limit = 0;
  bool broken_stderr = false;
  std::vector<std::string> kernel_names;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "strata_sim_job: %s\nusage: strata_sim_job [--agent PATH] [--threads T] [--iterations N] [--kernels K] "
               "[--sleep-us U] [--range NAME] [--lockstep-ms P] [--profiler-range] [--seconds S] [--kernel-ns D] [--idle-ms M] "
               "[--hold-fds-ms M] [--file-size-limit B] [--broken-stderr] [--note TEXT] [--kernel-names A,B,...] "
               "[--range-fault FUNCTION:N]\n",
               why);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--profiler-range" || a == "--broken-stderr") {
      (a == "--profiler-range" ? o.profiler_range : o.broken_stderr) = true;
      continue;
    }
    if (i + 1 >= argc) usage(("missing value after " + a).c_str());
    const char* v = argv[++i];
    if (a == "--agent") o.agent = v;
    else if (a == "--threads") o.threads = std::atoi(v);
    else if (a == "--iterations") o.iterations = std::strtoull(v, nullptr, 10);
    else if (a == "--kernels") o.kernels = std::atoi(v);
    else if (a == "--sleep-us") o.sleep_us = std::strtoull(v, nullptr, 10);
    else if (a == "--range") o.range = v;
    else if (a == "--lockstep-ms") o.lockstep_ms = std::strtoull(v, nullptr, 10);
    else if (a == "--seconds") o.seconds = std::atof(v);
    else if (a == "--kernel-ns") o.kernel_ns = std::strtoull(v, nullptr, 10);
    else if (a == "--idle-ms") o.idle_ms = std::strtoull(v, nullptr, 10);
    else if (a == "--hold-fds-ms") o.hold_fds_ms = std::strtoull(v, nullptr, 10);
    else if (a == "--file-size-limit") o.file_size_limit = std::strtoull(v, nullptr, 10);
    else if (a == "--note") continue;
    else if (a == "--kernel-names") {
      o.kernel_names.clear();
      for (std::string names = v; !names.empty();) {
        const size_t comma = std::min(names.find(','), names.size());
        o.kernel_names.push_back(names.substr(0, comma));
        names.erase(0, comma + 1);
      }
      o.kernels = static_cast<int>(o.kernel_names.size());
    } else if (a == "--range-fault") {
      const char* colon = std::strchr(v, ':');
      if (colon == nullptr) usage("--range-fault takes FUNCTION:N");
      strata_sim_range_profiler_fail(std::string(v, colon).c_str(), std::strtoull(colon + 1, nullptr, 10));
    }
    else usage(("unknown option " + a).c_str());
  }
  if (const char* injected = std::getenv("CUDA_INJECTION64_PATH"); o.agent.empty() && injected != nullptr)
    o.agent = injected;
  if (o.agent.empty()) usage("--agent or CUDA_INJECTION64_PATH is required");
  if (o.threads < 1 || o.kernels < 0) usage("--threads must be >= 1 and --kernels >= 0");
  if (o.iterations == 0 && o.seconds <= 0) o.iterations = 10;
  return o;
}

// What NVTX does on its first call when NVTX_INJECTION64_PATH names a tool: load it and hand
// it the export table. The agent forwards that to CUPTI (here, the simulator).
void inject_nvtx() {
  const char* path = std::getenv("NVTX_INJECTION64_PATH");
  if (path == nullptr || *path == '\0') return;
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  auto init = lib != nullptr ? reinterpret_cast<int (*)(const void*)>(dlsym(lib, "InitializeInjectionNvtx2")) : nullptr;
  if (init == nullptr || init(nullptr) == 0)
    std::fprintf(stderr, "strata_sim_job: NVTX injection of %s failed\n", path);
}

// Sleeps until the next multiple of `period_ms` of the monotonic clock (steady_clock: the same
// clock in every process of the machine) and returns which multiple it is.
uint64_t wait_for_slot(uint64_t period_ms) {
  using namespace std::chrono;
  const auto now = duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
  const uint64_t slot = static_cast<uint64_t>(now) / period_ms + 1;
  std::this_thread::sleep_until(steady_clock::time_point(milliseconds(slot * period_ms)));
  return slot;
}

void run_thread(const Options& o, int index, std::chrono::steady_clock::time_point until) {
  const auto stream = static_cast<uint32_t>(1 + index);
  std::vector<std::string> names;
  for (int k = 0; k < o.kernels; ++k)
    names.push_back(o.kernel_names.empty() ? "sim_kernel_" + std::to_string(k) : o.kernel_names[static_cast<size_t>(k)]);
  const bool lead = index == 0;
  for (uint64_t i = 0; o.iterations == 0 || i < o.iterations; ++i) {
    if (o.seconds > 0 && std::chrono::steady_clock::now() >= until) break;
    std::string range = o.range;
    if (lead && o.lockstep_ms > 0) range += " " + std::to_string(wait_for_slot(o.lockstep_ms));
    if (lead && o.profiler_range) strata_sim_cuda_profiler_start();
    if (lead && !range.empty()) strata_sim_nvtx_range_push(range.c_str());
    for (const std::string& name : names) {
      strata_sim_cuda_get_device();
      strata_sim_cuda_launch_kernel(name.c_str(), stream, o.kernel_ns);
    }
    strata_sim_cuda_device_synchronize();
    if (lead && !o.range.empty()) strata_sim_nvtx_range_pop();
    if (lead && o.profiler_range) strata_sim_cuda_profiler_stop();
    if (o.sleep_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(o.sleep_us));
  }
}

// Opens /dev/null until the process has no descriptor left, holds them, then closes them.
void hold_all_fds(uint64_t ms) {
  std::vector<int> held;
  for (int fd; (fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) held.push_back(fd);
  std::printf("fds held\n");
  std::fflush(stdout);
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  for (int fd : held) ::close(fd);
  std::printf("fds released\n");
  std::fflush(stdout);
}

void print_stats() {
  StrataSimCounters c{};
  strata_sim_read_counters(&c);
  std::string json = "{";
#define STRATA_SIM_JSON(name) \
  json += std::string(json.size() > 1 ? ", " : "") + "\"" #name "\": " + std::to_string(c.name);
  STRATA_SIM_COUNTERS(STRATA_SIM_JSON)
#undef STRATA_SIM_JSON
  json += "}";
  std::printf("SIMSTATS %s\n", json.c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  if (o.file_size_limit > 0) {
    const rlimit limit{o.file_size_limit, o.file_size_limit};
    ::setrlimit(RLIMIT_FSIZE, &limit);
  }
  if (rlimit files{}; o.hold_fds_ms > 0 && ::getrlimit(RLIMIT_NOFILE, &files) == 0) {
    files.rlim_cur = std::min<rlim_t>(files.rlim_cur, 256);  // few to take: containers allow millions
    ::setrlimit(RLIMIT_NOFILE, &files);
  }
  if (int p[2]; o.broken_stderr && ::pipe(p) == 0) {
    ::dup2(p[1], STDERR_FILENO);
    ::close(p[0]);
    ::close(p[1]);
  }
  int devices = 0;
  if (cuDeviceGetCount(&devices) != CUDA_SUCCESS || devices < 1) {  // the driver stand-in (cuda_sim.cpp)
    std::fprintf(stderr, "strata_sim_job: no simulated device\n");
    return 5;
  }
  void* agent = dlopen(o.agent.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (agent == nullptr) {
    std::fprintf(stderr, "strata_sim_job: cannot load the agent: %s\n", dlerror());
    return 3;
  }
  auto initialize = reinterpret_cast<int (*)()>(dlsym(agent, "InitializeInjection"));
  if (initialize == nullptr) {
    std::fprintf(stderr, "strata_sim_job: %s has no InitializeInjection\n", o.agent.c_str());
    return 4;
  }
  initialize();  // what cuInit does when CUDA_INJECTION64_PATH names the agent
  inject_nvtx();
  std::printf("ready %d\n", static_cast<int>(getpid()));
  std::fflush(stdout);

  const auto until = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                            std::chrono::duration<double>(o.seconds));
  std::vector<std::thread> threads;
  for (int t = 0; t < o.threads; ++t) threads.emplace_back(run_thread, std::cref(o), t, until);
  if (o.hold_fds_ms > 0) hold_all_fds(o.hold_fds_ms);
  for (std::thread& t : threads) t.join();
  if (o.idle_ms > 0) {
    std::printf("idle\n");
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::milliseconds(o.idle_ms));
  }
  print_stats();
  return 0;  // the agent's atexit handler finishes a recording still running
}
