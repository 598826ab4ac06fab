// A process a test runs: its stdout and stderr collected on a thread, every wait bounded,
// killed if the test ends first.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace strata::collector::test {

class ChildProcess {
 public:
  ChildProcess() = default;
  ~ChildProcess();  // kills the process if it still runs
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Runs argv[0] with this process's environment less the variables `drop` says to drop
  // (as given in `env`, or when drop(name) is true), plus `env`. False with error() if not.
  bool start(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {},
             bool (*drop)(const std::string& name) = nullptr);
  // Waits up to `timeout_ms` for `text` in stdout; false when the process ended or time ran out.
  bool wait_for_output(const std::string& text, int timeout_ms) const;
  // Waits up to `timeout_ms` for the process to exit (then kills it). False when it was killed.
  bool wait(int timeout_ms);

  pid_t pid() const { return pid_; }
  int exit_status() const { return exit_status_; }      // -1 before wait(); 128 + signal when killed
  double seconds_run() const { return seconds_run_; }  // from start() to the exit
  std::string out() const;
  std::string err() const;
  const std::string& error() const { return error_; }

  // runs `argv` to its end (at most `timeout_ms`) and returns its exit status (-1: killed).
  static int run(const std::vector<std::string>& argv, std::string* out = nullptr, std::string* err = nullptr,
                 int timeout_ms = 30000);

 private:
  void read_output(int out_fd, int err_fd);

  pid_t pid_ = -1;
  int exit_status_ = -1;
  double seconds_run_ = 0;
  int64_t started_ns_ = 0;
  std::string error_;
  std::thread reader_;
  mutable std::mutex mu_;
  mutable std::condition_variable grew_;
  std::string out_, err_;
  bool eof_ = false;
};

}  // namespace strata::collector::test
