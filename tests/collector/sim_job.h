// Runs strata_sim_job -- a simulated CUDA job that loads the real libstrata_agent.so over the
// CUPTI simulator (tests/collector/sim) -- for a test: in a private temp dir with its own
// STRATA_SOCKET_DIR, waiting for its "ready" line, collecting its output, and parsing the
// simulator's counters from its "SIMSTATS {json}" line. Every wait has a timeout.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "child_process.h"
#include "client/agents.h"
#include "core/base/status.h"

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
  // start() as `strata record` starts a job: `opt` as the start line in STRATA_RECORD, NVTX injected.
  bool start_recorded(const RecordOptions& opt, const std::vector<std::string>& args,
                      std::map<std::string, std::string> env = {});
  pid_t pid() const { return process_.pid(); }

  // Waits up to `timeout_ms` for the job to exit (then kills it). True when it exited with
  // status 0 and printed SIMSTATS; error() says why not.
  bool wait(int timeout_ms = 60000);

  // record_from_agent on this job, as `strata attach` does, asking the agent to stop when it
  // has not finished within `timeout_ms` (then also a failure, Cancelled).
  Result<RecordResult> record(const RecordOptions& opt, int timeout_ms = 30000);

  int exit_status() const { return process_.exit_status(); }  // -1 before wait(); 128 + signal when killed
  double seconds_run() const { return process_.seconds_run(); }  // from start() to the exit
  std::string out() const { return process_.out(); }  // stdout so far
  std::string err() const { return process_.err(); }  // stderr so far
  // Waits up to `timeout_ms` for the line `line` in stdout.
  bool wait_for_line(const std::string& line, int timeout_ms = 20000) const {
    return process_.wait_for_output(line + "\n", timeout_ms);
  }
  const std::string& error() const { return error_; }
  // A SIMSTATS counter (sim_api.h's names); throws std::out_of_range when absent.
  uint64_t stat(const std::string& name) const { return stats_.at(name); }
  const std::map<std::string, uint64_t>& stats() const { return stats_; }

  static std::string agent_path();

 private:
  std::string dir_;
  ChildProcess process_;
  bool started_ = false;
  std::string error_;
  std::map<std::string, uint64_t> stats_;
};

}  // namespace strata::collector::test
