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
#include <string>
#include <thread>
#include <vector>

#include "client/agents.h"

namespace strata::collector {

using SteadyClock = std::chrono::steady_clock;

// list_agents off the caller's thread, again every `interval` while someone looks.
class AgentScan {
 public:
  explicit AgentScan(SteadyClock::duration interval = std::chrono::seconds(2)) : interval_(interval) {}
  void refresh();                             // starts a scan now, unless one is running
  void refresh_if_due(SteadyClock::time_point now);
  bool running() const { return pending_.valid(); }
  // Takes a finished scan's result; false while none has finished since the last call.
  bool take(std::vector<AgentInfo>& agents, std::string& error);

 private:
  struct Found {
    std::vector<AgentInfo> agents;
    std::string error;
  };
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

// One recording from a running agent, followed live:
//   Idle -> Recording -> (stop: Stopping) -> Finished | Failed
// next() says when the caller should re-read the growing file, and asks once for the
// final read when the file is complete (or, after a failure, when part of it was shown).
class AttachSession {
 public:
  enum class State { Idle, Recording, Stopping, Finished, Failed };
  enum class Action { None, Reload, FinalLoad };

  explicit AttachSession(SteadyClock::duration reload_interval = std::chrono::seconds(1)) : follow_(reload_interval) {}
  AttachSession(const AttachSession&) = delete;
  AttachSession& operator=(const AttachSession&) = delete;
  ~AttachSession();  // stops a recording in progress and waits for the agent to close its file

  // Starts record_from_agent on a worker thread; false (with `error`) when a recording runs.
  bool start(pid_t pid, RecordOptions opt, std::string* error);
  void stop();  // asks the agent to stop early; the file is still completed
  // Called once a frame. `loading`: a read of the file is in flight.
  Action next(SteadyClock::time_point now, bool loading);
  void shown(uint64_t events);  // a read of the growing file was installed
  // The recording ended and next() has asked for the final read (or there is none to ask for).
  bool done() const;

  State state() const { return state_.load(); }
  bool active() const { return state() == State::Recording || state() == State::Stopping; }
  pid_t pid() const { return pid_; }
  const std::string& output() const { return opt_.output; }
  std::vector<std::string> lines() const;
  std::string error() const;
  RecordResult result() const;
  uint64_t events_shown() const { return events_shown_; }
  double seconds() const;  // since start, frozen when the recording ends

 private:
  bool worth_final_read() const;

  LiveFollow follow_;
  pid_t pid_ = 0;
  RecordOptions opt_;
  std::atomic<State> state_{State::Idle};
  std::atomic<bool> cancel_{false};
  std::thread worker_;
  mutable std::mutex mu_;  // guards lines_, error_, result_, ended_
  std::vector<std::string> lines_;
  std::string error_;
  RecordResult result_;
  SteadyClock::time_point started_{}, ended_{};
  uint64_t events_shown_ = 0;
  bool final_asked_ = false;
};

}  // namespace strata::collector
