// Runs strata_sim_job -- a simulated CUDA job that loads the real libstrata_agent.so over the
// CUPTI simulator (tests/collector/sim) -- for a test: in a private temp dir with its own
// STRATA_SOCKET_DIR, waiting for its "ready" line, collecting its output, and parsing the
// simulator's counters from its "SIMSTATS {json}" line. Every wait has a timeout.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "client/agents.h"

namespace strata::collector::test {

class SimJob {
 public:
  // Creates the temp dir and points this process's STRATA_SOCKET_DIR at the job's socket
  // directory, so the client calls (agent_request, record_from_agent) find its agent.
  SimJob();
  // Kills the job if it still runs and removes the temp dir.
  ~SimJob();
  SimJob(const SimJob&) = delete;
  SimJob& operator=(const SimJob&) = delete;

  const std::string& dir() const { return dir_; }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

  // Starts `strata_sim_job --agent AGENT ARGS...` with this process's environment, minus the
  // agent's own variables (STRATA_RECORD, STRATA_BUFFER_MB, *_INJECTION64_PATH),
  // plus `env`; waits up to `timeout_ms` for its "ready PID" line. False with error() set if not.
  bool start(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {},
             int timeout_ms = 20000);
  pid_t pid() const { return pid_; }

  // Waits up to `timeout_ms` for the job to exit (then kills it). True when it exited with
  // status 0 and printed SIMSTATS; error() says why not.
  bool wait(int timeout_ms = 60000);

  // record_from_agent on this job, as `strata attach` does, asking the agent to stop when it
  // has not finished within `timeout_ms` (then also an error).
  std::optional<RecordResult> record(const RecordOptions& opt, std::string* error, int timeout_ms = 30000);

  int exit_status() const { return exit_status_; }  // -1 before wait(); 128 + signal when killed
  double seconds_run() const { return seconds_run_; }  // from start() to the exit
  std::string out() const;                          // stdout so far
  std::string err() const;                          // stderr so far
  const std::string& error() const { return error_; }
  // A SIMSTATS counter (sim_api.h's names); throws std::out_of_range when absent.
  uint64_t stat(const std::string& name) const { return stats_.at(name); }
  const std::map<std::string, uint64_t>& stats() const { return stats_; }

  static std::string agent_path();

 private:
  void read_output(int out_fd, int err_fd);
  void stop_reader();

  std::string dir_;
  pid_t pid_ = -1;
  int exit_status_ = -1;
  double seconds_run_ = 0;
  std::string error_;
  std::map<std::string, uint64_t> stats_;
  std::thread reader_;
  mutable std::mutex mu_;
  std::condition_variable grew_;
  std::string out_, err_;
  bool eof_ = false;
  int64_t started_ns_ = 0;
};

}  // namespace strata::collector::test
