#include "sim_job.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <simdjson.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>

extern char** environ;

namespace strata::collector::test {

namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Variables the agent reads: a job gets only those its test gives it.
bool is_agent_variable(const std::string& key) {
  return key == "STRATA_RECORD" || key == "STRATA_BUFFER_MB" ||
         key == "STRATA_SOCKET_DIR" || key == "NVTX_INJECTION64_PATH" || key == "CUDA_INJECTION64_PATH";
}

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (std::string& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// The counters of the "SIMSTATS {json}" line, empty when there is none.
std::map<std::string, uint64_t> parse_stats(const std::string& out, std::string* error) {
  std::map<std::string, uint64_t> stats;
  const size_t at = out.find("SIMSTATS ");
  if (at == std::string::npos) {
    *error = "no SIMSTATS line";
    return stats;
  }
  const size_t begin = at + std::strlen("SIMSTATS ");
  const std::string json = out.substr(begin, out.find('\n', begin) - begin);
  simdjson::dom::parser parser;
  simdjson::dom::object object;
  if (parser.parse(json).get(object) != simdjson::SUCCESS) {
    *error = "SIMSTATS is not a JSON object: " + json;
    return stats;
  }
  for (auto field : object) {
    uint64_t value = 0;
    if (field.value.get(value) == simdjson::SUCCESS) stats[std::string(field.key)] = value;
  }
  return stats;
}

}  // namespace

std::string SimJob::agent_path() { return STRATA_AGENT_PATH; }

SimJob::SimJob() {
  char tmpl[] = "/tmp/strata-sim-XXXXXX";
  if (::mkdtemp(tmpl) != nullptr) dir_ = tmpl;
  ::setenv("STRATA_SOCKET_DIR", (dir_ + "/sockets").c_str(), 1);
}

SimJob::~SimJob() {
  if (pid_ > 0 && exit_status_ < 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  stop_reader();
  std::error_code ec;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
}

bool SimJob::start(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
                   int timeout_ms) {
  if (dir_.empty() || pid_ > 0) {
    error_ = dir_.empty() ? "cannot create a temp dir" : "the job was started already";
    return false;
  }
  std::vector<std::string> argv = {STRATA_SIM_JOB, "--agent", STRATA_AGENT_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::string> envs;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string key = entry.substr(0, entry.find('='));
    if (!is_agent_variable(key) && env.count(key) == 0) envs.push_back(entry);
  }
  envs.push_back("STRATA_SOCKET_DIR=" + dir_ + "/sockets");
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
  std::vector<char*> c_argv = c_strings(argv), c_env = c_strings(envs);
  const int rc = ::posix_spawn(&pid_, STRATA_SIM_JOB, &actions, nullptr, c_argv.data(), c_env.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  ::close(err[1]);
  if (rc != 0) {
    pid_ = -1;
    ::close(out[0]);
    ::close(err[0]);
    error_ = std::string("cannot run " STRATA_SIM_JOB ": ") + std::strerror(rc);
    return false;
  }
  started_ns_ = now_ns();
  reader_ = std::thread(&SimJob::read_output, this, out[0], err[0]);

  const std::string ready = "ready " + std::to_string(pid_) + "\n";
  std::unique_lock<std::mutex> lock(mu_);
  grew_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                 [&] { return out_.find(ready) != std::string::npos || eof_; });
  if (out_.find(ready) != std::string::npos) return true;
  error_ = eof_ ? "the job ended before it was ready" : "no 'ready' line within " + std::to_string(timeout_ms) + " ms";
  error_ += "; stderr: " + err_;
  return false;
}

void SimJob::read_output(int out_fd, int err_fd) {
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

void SimJob::stop_reader() {
  if (reader_.joinable()) reader_.join();  // ends at EOF: only once the job is gone
}

bool SimJob::wait(int timeout_ms) {
  if (pid_ <= 0) {
    error_ = "the job was not started";
    return false;
  }
  bool timed_out = false;
  if (exit_status_ < 0) {
    const int64_t deadline = now_ns() + int64_t{timeout_ms} * 1000000;
    int status = 0;
    for (;;) {
      const pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) break;
      if (r < 0 && errno != EINTR) {
        error_ = std::string("waitpid: ") + std::strerror(errno);
        return false;
      }
      if (now_ns() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        timed_out = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    seconds_run_ = static_cast<double>(now_ns() - started_ns_) * 1e-9;
    exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  stop_reader();
  std::string stats_error;
  stats_ = parse_stats(out(), &stats_error);
  if (timed_out) error_ = "the job did not exit within " + std::to_string(timeout_ms) + " ms (killed)";
  else if (exit_status_ != 0) error_ = "the job exited with status " + std::to_string(exit_status_);
  else error_ = stats_error;
  if (!error_.empty()) error_ += "; stderr: " + err();
  return error_.empty();
}

std::optional<RecordResult> SimJob::record(const RecordOptions& opt, std::string* error, int timeout_ms) {
  std::atomic<bool> cancel{false};
  std::mutex mu;
  std::condition_variable finished;
  bool done = false;
  std::thread watchdog([&] {
    std::unique_lock<std::mutex> lock(mu);
    if (!finished.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return done; })) cancel.store(true);
  });
  auto result = record_from_agent(pid_, opt, &cancel, {}, error);
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
  }
  finished.notify_all();
  watchdog.join();
  if (cancel.load()) {
    *error = "the recording did not finish within " + std::to_string(timeout_ms) + " ms (stopped)";
    return std::nullopt;
  }
  return result;
}

std::string SimJob::out() const {
  std::lock_guard<std::mutex> lock(mu_);
  return out_;
}

std::string SimJob::err() const {
  std::lock_guard<std::mutex> lock(mu_);
  return err_;
}

}  // namespace strata::collector::test
