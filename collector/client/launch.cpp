#include "launch.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

namespace strata::collector {

namespace {

bool is_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string exe_dir() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string path(buf, static_cast<size_t>(n));
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

}  // namespace

Result<std::string> find_agent() {
  if (const char* env = std::getenv("STRATA_AGENT"); env != nullptr && *env != '\0') {
    if (is_file(env)) return std::string(env);
    return Status::not_found(std::string("STRATA_AGENT names ") + env + ", which does not exist");
  }
  const std::string dir = exe_dir();
  std::vector<std::string> candidates = {dir + "/libstrata_agent.so", dir + "/../collector/libstrata_agent.so",
                                         dir + "/../lib/libstrata_agent.so"};
#ifdef STRATA_AGENT_BUILD_PATH
  candidates.push_back(STRATA_AGENT_BUILD_PATH);
#endif
  for (const std::string& c : candidates)
    if (is_file(c)) return c;
  return Status::not_found(
      "libstrata_agent.so was not found (looked next to the executable, in the build tree and in ../lib). "
      "It is built only where CUDA's CUPTI is found: configure with CUPTI present (STRATA_CUDA_ROOT) or set "
      "STRATA_AGENT=/path/to/libstrata_agent.so");
}

Result<pid_t> launch_with_agent(const std::vector<std::string>& argv, const std::string& agent,
                                const std::string& record_request) {
  if (argv.empty()) return Status::invalid("no command to run");
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return Status::io(std::string("pipe: ") + std::strerror(errno));
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    Status failed = Status::io(std::string("fork: ") + std::strerror(errno));
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    return failed;
  }
  if (pid == 0) {
    ::close(pipe_fds[0]);
    ::setenv("CUDA_INJECTION64_PATH", agent.c_str(), 1);
    ::setenv("NVTX_INJECTION64_PATH", agent.c_str(), 1);
    if (record_request.empty()) ::unsetenv("STRATA_RECORD");
    else ::setenv("STRATA_RECORD", record_request.c_str(), 1);
    ::execvp(args[0], args.data());
    const int err = errno;  // tell the parent why, through the close-on-exec pipe
    [[maybe_unused]] ssize_t n = ::write(pipe_fds[1], &err, sizeof err);
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  int child_errno = 0;
  ssize_t n;
  do {
    n = ::read(pipe_fds[0], &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  ::close(pipe_fds[0]);
  if (n == sizeof child_errno) {
    ::waitpid(pid, nullptr, 0);
    return Status(child_errno == ENOENT ? StatusCode::NotFound : StatusCode::Io,
                  "cannot run " + argv[0] + ": " + std::strerror(child_errno));
  }
  return pid;
}

int wait_child(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return 127;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace strata::collector
