#include "child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

extern char** environ;

namespace strata::collector::test {

namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (std::string& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && exit_status_ < 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (reader_.joinable()) reader_.join();
}

bool ChildProcess::start(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                         bool (*drop)(const std::string& name)) {
  std::vector<std::string> args = argv, envs;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string key = entry.substr(0, entry.find('='));
    if (env.count(key) == 0 && (drop == nullptr || !drop(key))) envs.push_back(entry);
  }
  for (const auto& [key, value] : env) envs.push_back(key + "=" + value);
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    error_ = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  if (::pipe2(err, O_CLOEXEC) != 0) {
    error_ = std::string("pipe: ") + std::strerror(errno);
    ::close(out[0]);
    ::close(out[1]);
    return false;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);
  std::vector<char*> c_argv = c_strings(args), c_env = c_strings(envs);
  const int rc = ::posix_spawn(&pid_, c_argv[0], &actions, nullptr, c_argv.data(), c_env.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  ::close(err[1]);
  if (rc != 0) {
    pid_ = -1;
    ::close(out[0]);
    ::close(err[0]);
    error_ = "cannot run " + argv[0] + ": " + std::strerror(rc);
    return false;
  }
  started_ns_ = now_ns();
  reader_ = std::thread(&ChildProcess::read_output, this, out[0], err[0]);
  return true;
}

void ChildProcess::read_output(int out_fd, int err_fd) {
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  int open = 2;
  char buf[4096];
  while (open > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        std::lock_guard<std::mutex> lock(mu_);
        (i == 0 ? out_ : err_).append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open;
      }
    }
    grew_.notify_all();
  }
  for (const pollfd& p : fds)
    if (p.fd >= 0) ::close(p.fd);
  std::lock_guard<std::mutex> lock(mu_);
  eof_ = true;
  grew_.notify_all();
}

bool ChildProcess::wait_for_output(const std::string& text, int timeout_ms) const {
  std::unique_lock<std::mutex> lock(mu_);
  grew_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                 [&] { return out_.find(text) != std::string::npos || eof_; });
  return out_.find(text) != std::string::npos;
}

bool ChildProcess::wait(int timeout_ms) {
  if (pid_ <= 0) return false;
  bool killed = false;
  if (exit_status_ < 0) {
    const int64_t deadline = now_ns() + int64_t{timeout_ms} * 1000000;
    int status = 0;
    for (;;) {
      const pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) break;
      if (r < 0 && errno != EINTR) return false;
      if (now_ns() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        killed = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    seconds_run_ = static_cast<double>(now_ns() - started_ns_) * 1e-9;
    exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  if (reader_.joinable()) reader_.join();  // ends at EOF: only once the process is gone
  return !killed;
}

std::string ChildProcess::out() const {
  std::lock_guard<std::mutex> lock(mu_);
  return out_;
}

std::string ChildProcess::err() const {
  std::lock_guard<std::mutex> lock(mu_);
  return err_;
}

int ChildProcess::run(const std::vector<std::string>& argv, std::string* out, std::string* err, int timeout_ms) {
  ChildProcess p;
  if (!p.start(argv)) {
    if (err != nullptr) *err = p.error();
    return -1;
  }
  const bool ended = p.wait(timeout_ms);
  if (out != nullptr) *out = p.out();
  if (err != nullptr) *err = p.err();
  return ended ? p.exit_status() : -1;
}

}  // namespace strata::collector::test
