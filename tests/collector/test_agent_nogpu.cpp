// Loading libstrata_agent.so where there is no GPU: a clear message, and the process
// runs on unharmed.
#include <doctest/doctest.h>

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace {
bool has_nvidia_device() { return ::access("/dev/nvidia0", F_OK) == 0 || ::access("/dev/nvidiactl", F_OK) == 0; }
}  // namespace

TEST_CASE("the agent steps aside cleanly without a GPU") {
  if (has_nvidia_device()) {
    MESSAGE("an NVIDIA device is present: the agent would attach; see tests/collector/gpu/run_gpu.sh");
    return;
  }
  int err_pipe[2];
  REQUIRE(::pipe(err_pipe) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::dup2(err_pipe[1], STDERR_FILENO);
    ::close(err_pipe[0]);
    void* lib = ::dlopen(STRATA_AGENT_PATH, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      std::fprintf(stderr, "dlopen failed: %s\n", ::dlerror());
      ::_exit(10);
    }
    auto init = reinterpret_cast<int (*)()>(::dlsym(lib, "InitializeInjection"));
    if (init == nullptr) ::_exit(11);
    if (init() != 1) ::_exit(12);  // the driver must never see a failure from us
    if (init() != 1) ::_exit(13);  // a second call is harmless too
    // The process carries on with its own work.
    volatile double x = 0;
    for (int i = 0; i < 1000000; ++i) x = x + i * 0.5;
    ::_exit(x > 0 ? 0 : 14);
  }
  ::close(err_pipe[1]);
  std::string err;
  char buf[512];
  ssize_t n;
  while ((n = ::read(err_pipe[0], buf, sizeof buf)) > 0) err.append(buf, static_cast<size_t>(n));
  ::close(err_pipe[0]);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  INFO("stderr: " << err);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(err.find("strata agent: CUPTI is not available") != std::string::npos);
  CHECK(err.find("the job runs on without it") != std::string::npos);
  CHECK(err.find("strata agent:", 1) == std::string::npos);  // said once, not per call
}
