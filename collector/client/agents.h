// The client side of the control protocol, used by `strata record/attach` and the
// viewer's Attach dialog: find running agents, ask them to record, wait for the file.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "protocol/message.h"

namespace strata::collector {

struct AgentInfo {
  pid_t pid = 0;
  std::string command;
  std::string gpu;
  std::string state;   // dormant, waiting, armed, recording, stopping
  std::string output;  // current or last recording
  int64_t rank = -1;   // its place in a distributed job, from its environment (-1: none given)
  int64_t world_size = -1;
};

// Agents of this user that answer on their socket, into `out`; sockets of dead processes are
// removed. Not ok: one line per agent that did not answer (the others are still in `out`), or why
// the socket directory is refused (not this user's, or not private). Every text is printable.
Status list_agents(std::vector<AgentInfo>& out);

// One request to pid's agent, after checking its socket directory and socket; the reply's
// values are made printable (control characters and invalid UTF-8 replaced).
Result<Message> agent_request(pid_t pid, const Message& req, int timeout_ms);
// The same to many agents at once: every agent connected first, then every request written back
// to back, then the replies read, so the agents get their requests within microseconds of each
// other. Reply i, or why it is missing.
std::vector<Result<Message>> agent_requests(const std::vector<std::pair<pid_t, Message>>& requests, int timeout_ms);

struct RecordOptions {
  uint64_t duration_ms = 0;  // 0 with iterations 0: until stopped
  uint32_t iterations = 0;   // counted from NVTX ranges (or cudaProfilerStart/Stop)
  uint64_t delay_ms = 0;
  std::string pattern;       // NVTX range glob; empty: the agent's default "*iteration*"
  std::string source;        // "nvtx" (default) or "profiler"
  std::string output;        // absolute path of the trace the job writes
  // Instead of `output`: a directory where each agent writes rank-R.pt.trace.json (pid-P without
  // a rank; protocol/job_rank.h), gzipped with `gzip`.
  std::string output_dir;
  bool gzip = false;
  std::string kinds;         // what to record (protocol/kinds.h); empty: the agent's default
  std::string metrics;       // hardware metrics per kernel (protocol/metrics.h); empty: none
  std::string kernels;       // which kernels' metrics (a glob); empty: every kernel
};
Message start_request(const RecordOptions& opt);

struct RecordResult {
  std::string output;
  uint64_t events = 0;
  uint64_t dropped = 0;
};

// "N events[, M records dropped (buffers full)]", or why an empty recording is empty.
std::string describe(const RecordResult& r);

// One agent's part of a recording that record_agents follows.
struct AgentRecording {
  pid_t pid = 0;
  int64_t rank = -1;      // as the agent said before the start (-1: none)
  std::string output;     // the file: the one asked for, or the one the agent named in output_dir
  std::string state;      // "" before the start; then the agent's (armed, recording, ...); "finished", "failed"
  uint64_t records = 0;   // CUPTI records written so far, while it records
  bool done = false;      // finished or failed
  Status status;          // not ok: why it failed
  RecordResult result;    // once finished
};

// "rank 3 (pid 1234)", or "pid 1234" for an agent without a rank.
std::string agent_name(const AgentRecording& a);

struct MultiRecording {
  std::vector<AgentRecording> agents;  // in the order asked for
  // From the first connection for the start requests to the last reply read: every agent that
  // started received its request, and began recording or armed its iteration trigger, inside it.
  double start_window_ms = 0;
  bool finished() const;  // every agent finished without error
};

// Starts a recording in each agent and waits until every file is complete or its agent failed
// (one agent's failure does not stop the others). The start requests go out together
// (agent_requests). `cancel` (e.g. set by SIGINT) asks every agent to stop early; `progress` is
// called after the start and after each round of status requests (five a second).
MultiRecording record_agents(const std::vector<pid_t>& pids, const RecordOptions& opt, const std::atomic<bool>* cancel,
                             const std::function<void(const MultiRecording&)>& progress);

// record_agents for one agent, its status told in lines ("recording pid N into FILE", "agent
// state: armed"): the result, or why there is none.
Result<RecordResult> record_from_agent(pid_t pid, const RecordOptions& opt, const std::atomic<bool>* cancel,
                                      const std::function<void(const std::string&)>& progress);

// Absolute form of a path the user typed (relative to the current directory).
std::string absolute_path(const std::string& path);

}  // namespace strata::collector
