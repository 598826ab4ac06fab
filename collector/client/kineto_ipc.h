// `strata attach --kineto PID`: play the part of the dynolog daemon for a PyTorch job
// started with KINETO_USE_DAEMON=1, so Kineto traces itself on demand.
//
// Wire format (dynolog's "ipcfabric"): unix datagrams on the abstract address
// "\0dynolog\0" (or $KINETO_IPC_SOCKET_DIR/dynolog). Each datagram is a 40-byte header
// {uint64 size; char type[32]} and `size` payload bytes. The job sends
//   "ctxt": {int32 gpu; int32 pid; int64 jobid}            -> reply "ctxt": int32 count
//   "req":  {int32 type; int32 n; int64 jobid; int32 pids[n]} -> reply "req": config text
// every few seconds; pids are the job's and its ancestors'. An empty config means "nothing".
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"

namespace strata::collector::kineto {

inline constexpr size_t kTypeBytes = 32;
inline constexpr size_t kHeaderBytes = 8 + kTypeBytes;
inline constexpr int32_t kConfigActivities = 2;  // LibkinetoConfigType::ACTIVITIES bit

struct Datagram {
  std::string type;
  std::vector<uint8_t> payload;
};
std::vector<uint8_t> encode(std::string_view type, const void* payload, size_t size);
Result<Datagram> decode(const uint8_t* data, size_t size);

struct Context {
  int32_t gpu = 0;
  int32_t pid = 0;
  int64_t jobid = 0;
};
struct Request {
  int32_t type = 0;
  int64_t jobid = 0;
  std::vector<int32_t> pids;
};
std::vector<uint8_t> encode_context(const Context& c);
std::vector<uint8_t> encode_request(const Request& r);
std::optional<Context> decode_context(const std::vector<uint8_t>& payload);
std::optional<Request> decode_request(const std::vector<uint8_t>& payload);

// Seconds Kineto spends with CUPTI enabled before its trace window opens. Kineto's CUPTI is
// switched on only when the request arrives, and the first enable in a running PyTorch job
// stalls its threads for seconds (measured: ~4-5 s on an H100 with PyTorch 2.11) while
// CUPTI sets itself up; a window inside that stall holds no CPU ops and no kernels. 5 s is
// Kineto's own default; dynolog leaves it at that.
inline constexpr uint32_t kKinetoWarmupSecs = 5;

// The on-demand config Kineto parses. By duration: PROFILE_START_TIME=0 (now, after the
// warm-up), ACTIVITIES_WARMUP_PERIOD_SECS, ACTIVITIES_DURATION_MSECS. By iterations, as
// dynolog sends it: PROFILE_START_ITERATION=0, PROFILE_START_ITERATION_ROUNDUP=1,
// ACTIVITIES_ITERATIONS (Kineto counts iterations only when the job reports steps, e.g.
// optimizer steps with torch.profiler loaded; otherwise it traces ACTIVITIES_DURATION_MSECS,
// default 500 ms, after the warm-up). Plus ACTIVITIES_LOG_FILE.
std::string trace_config(uint64_t duration_ms, uint32_t iterations, const std::string& log_file,
                         uint32_t warmup_s = kKinetoWarmupSecs);

// Socket address of an ipcfabric endpoint: abstract unless KINETO_IPC_SOCKET_DIR is set.
// Returns the address length to pass to bind/sendto, or 0 when the name does not fit.
size_t endpoint_address(const std::string& name, void* sockaddr_un_out);

class Daemon {
 public:
  Daemon() = default;
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;
  ~Daemon();
  // Binds the "dynolog" endpoint; fails, saying so, if a live process (a real dynolog) holds
  // it. A socket file left by a dead one is replaced; nothing else is ever removed.
  Status bind(const std::string& name);
  // Answers the job's polls until `pid`, or a process it started, took `config`; datagrams
  // from anyone else (the kernel vouches for the sender's pid and uid) get no answer.
  // Processes of the job not listing `pid` get an empty config. Io on timeout.
  Status deliver(pid_t pid, const std::string& config, int timeout_ms,
                 const std::function<void(const std::string&)>& log);

 private:
  int fd_ = -1;
  std::string path_;  // a filesystem socket we bound: removed on destruction if still ours
  dev_t dev_ = 0;
  ino_t ino_ = 0;
};

// A private directory for Kineto's trace, with an unpredictable name, under /tmp or
// $KINETO_ONDEMAND_TRACE_DIR (recent Kineto accepts on-demand paths only there). Removed,
// with what is left in it, on destruction.
class TraceDir {
 public:
  TraceDir() = default;
  TraceDir(const TraceDir&) = delete;
  TraceDir& operator=(const TraceDir&) = delete;
  ~TraceDir();
  Status create();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Kineto writes an on-demand trace to ACTIVITIES_LOG_FILE with "_PID" inserted before
// ".pt.trace.json" (or ".json"); older versions use the name as given.
std::vector<std::string> written_names(const std::string& requested, pid_t pid);

// Waits until Kineto finished writing one of `paths`: a regular file of this user (no
// symlink), ending with '}', that stopped growing. Returns that path; fails on timeout or when
// something else sits at one of the paths.
Result<std::string> wait_for_trace(const std::vector<std::string>& paths, int timeout_ms);

// Moves a trace wait_for_trace accepted to `to`: renamed, or copied from the checked file
// when `to` is on another file system.
Status move_trace(const std::string& from, const std::string& to);

}  // namespace strata::collector::kineto
