// The client side of the control protocol, used by `strata record/attach` and the
// viewer's Attach dialog: find running agents, ask them to record, wait for the file.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "protocol/message.h"

namespace strata::collector {

struct AgentInfo {
  pid_t pid = 0;
  std::string command;
  std::string gpu;
  std::string state;   // dormant, waiting, armed, recording, stopping
  std::string output;  // current or last recording
};

// Agents of this user that answer on their socket; sockets of dead processes are removed.
// `error` gets one line per agent that did not answer (others may still be listed), or why the
// socket directory is refused (not this user's, or not private). Every text is printable.
std::vector<AgentInfo> list_agents(std::string* error);

// One request to pid's agent, after checking its socket directory and socket; the reply's
// values are made printable (control characters and invalid UTF-8 replaced).
std::optional<Message> agent_request(pid_t pid, const Message& req, int timeout_ms, std::string* error);

struct RecordOptions {
  uint64_t duration_ms = 0;  // 0 with iterations 0: until stopped
  uint32_t iterations = 0;   // counted from NVTX ranges (or cudaProfilerStart/Stop)
  uint64_t delay_ms = 0;
  std::string pattern;       // NVTX range glob; empty: the agent's default "*iteration*"
  std::string source;        // "nvtx" (default) or "profiler"
  std::string output;        // absolute path of the trace the job writes
  std::string kinds;         // what to record (protocol/kinds.h); empty: the agent's default
};
Message start_request(const RecordOptions& opt);

struct RecordResult {
  std::string output;
  uint64_t events = 0;
  uint64_t dropped = 0;
};

// "N events[, M records dropped (buffers full)]", or why an empty recording is empty.
std::string describe(const RecordResult& r);

// Starts a recording in a running agent and waits until its file is complete. `cancel`
// (e.g. set by SIGINT) asks the agent to stop early; `progress` receives status lines.
std::optional<RecordResult> record_from_agent(pid_t pid, const RecordOptions& opt, const std::atomic<bool>* cancel,
                                              const std::function<void(const std::string&)>& progress,
                                              std::string* error);

// Absolute form of a path the user typed (relative to the current directory).
std::string absolute_path(const std::string& path);

}  // namespace strata::collector
