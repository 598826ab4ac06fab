// The viewer's Attach dialog without its window: agents listed on a worker thread, one
// recording run on a worker thread with its status lines, and when to re-read the trace
// file while the agent's streaming writer grows it (the live view).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "client/agents.h"
#include "client/jobs.h"

namespace strata::collector {

using SteadyClock = std::chrono::steady_clock;

// list_agents off the caller's thread, again every `interval` while someone looks; the agents
// come grouped into jobs too (group_jobs, which reads /proc, also off the caller's thread).
class AgentScan {
 public:
  explicit AgentScan(SteadyClock::duration interval = std::chrono::seconds(2)) : interval_(interval) {}
  void refresh();                             // starts a scan now, unless one is running
  void refresh_if_due(SteadyClock::time_point now);
  bool running() const { return pending_.valid(); }
  // Takes a finished scan's result, as agents or as jobs, and list_agents' status; false while
  // none has finished since the last call.
  bool take(std::vector<AgentInfo>& agents, Status& status);
  bool take(std::vector<JobInfo>& jobs, Status& status);

 private:
  struct Found {
    std::vector<AgentInfo> agents;
    std::vector<JobInfo> jobs;
    Status status;
  };
  std::optional<Found> take_found();
  SteadyClock::duration interval_;
  SteadyClock::time_point last_{};
  bool started_ = false;
  std::future<Found> pending_;
};

// When to re-read a growing file: at most once per interval, only when its size changed
// since the last read, never while a read is in flight.
class LiveFollow {
 public:
  explicit LiveFollow(SteadyClock::duration interval = std::chrono::seconds(1)) : interval_(interval) {}
  // `size_of` is asked only when a read could start; it returns -1 when there is no file.
  bool due(SteadyClock::time_point now, bool loading, const std::function<int64_t()>& size_of);
  SteadyClock::duration interval() const { return interval_; }

 private:
  SteadyClock::duration interval_;
  SteadyClock::time_point last_{};
  bool checked_ = false;
  int64_t read_size_ = -1;
};

int64_t file_size(const std::string& path);  // -1 when it cannot be read

// ./strata-PID-YYYYmmdd-HHMMSS.pt.trace.json, absolute.
std::string attach_output_name(pid_t pid);

// One recording from a running agent, or from every agent of a job, followed live:
//   Idle -> Recording -> (stop: Stopping) -> Finished | Failed
// next() says when the caller should re-read the growing file (a job: its directory, whose files
// grow together), and asks once for the final read when the recording is complete (or, after a
// failure, when part of it was shown).
class AttachSession {
 public:
  enum class State { Idle, Recording, Stopping, Finished, Failed };
  enum class Action { None, Reload, FinalLoad };

  explicit AttachSession(SteadyClock::duration reload_interval = std::chrono::seconds(1)) : follow_(reload_interval) {}
  AttachSession(const AttachSession&) = delete;
  AttachSession& operator=(const AttachSession&) = delete;
  ~AttachSession();  // stops a recording in progress and waits for the agent to close its file

  // Starts record_from_agent on a worker thread; refused (Invalid) when a recording runs.
  Status start(pid_t pid, RecordOptions opt);
  // Starts record_job on a worker thread: every agent of `job` into opt.output_dir (default
  // ./strata-job-LAUNCHER-YYYYmmdd-HHMMSS), one file per rank. Finished when every rank finished;
  // Failed, with each failed rank named in status(), when any did not.
  Status start_job(const JobInfo& job, RecordOptions opt);
  void stop();  // asks the agent to stop early; the file is still completed
  // Called once a frame. `loading`: a read of the file is in flight.
  Action next(SteadyClock::time_point now, bool loading);
  void shown(uint64_t events);  // a read of the growing file was installed
  // The recording ended and next() has asked for the final read (or there is none to ask for).
  bool done() const;

  State state() const { return state_.load(); }
  bool active() const { return state() == State::Recording || state() == State::Stopping; }
  pid_t pid() const { return pid_; }  // the agent's, or the job's launcher
  bool is_job() const { return !opt_.output_dir.empty(); }
  // The trace file, or for a job the directory to open as one job (strata DIR).
  const std::string& output() const { return is_job() ? opt_.output_dir : opt_.output; }
  // A job's agents as last polled: rank, file, state, records so far, status (empty for one agent).
  std::vector<AgentRecording> agents() const;
  std::vector<std::string> lines() const;
  Status status() const;  // Failed: why
  RecordResult result() const;  // a job's: events and drops summed over its ranks, output its directory
  uint64_t events_shown() const { return events_shown_; }
  double seconds() const;  // since start, frozen when the recording ends

 private:
  bool worth_final_read() const;
  using Work = std::function<Result<RecordResult>()>;
  Status launch(pid_t pid, RecordOptions opt, Work work);
  Result<RecordResult> run_job(const JobInfo& job);
  int64_t output_size() const;

  LiveFollow follow_;
  pid_t pid_ = 0;
  RecordOptions opt_;
  std::atomic<State> state_{State::Idle};
  std::atomic<bool> cancel_{false};
  std::thread worker_;
  mutable std::mutex mu_;  // guards lines_, status_, result_, ended_, agents_
  std::vector<std::string> lines_;
  std::vector<AgentRecording> agents_;
  Status status_;
  RecordResult result_;
  SteadyClock::time_point started_{}, ended_{};
  uint64_t events_shown_ = 0;
  bool final_asked_ = false;
};

}  // namespace strata::collector
