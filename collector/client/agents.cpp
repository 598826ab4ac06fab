#include "agents.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <thread>

#include "core/base/utf8.h"
#include "protocol/job_rank.h"
#include "protocol/control_socket.h"

namespace strata::collector {

namespace {
constexpr int kRequestTimeoutMs = 3000;
constexpr int kStopTimeoutMs = 120000;  // stop flushes and writes the whole file

// A reply's values made printable: they come from another process and reach a terminal or
// the viewer's window.
Message printable(Message m) {
  for (auto& [key, value] : m.fields) value = printable_text(value);
  return m;
}

// The path of pid's socket if it is a socket of this user in this user's private directory;
// else why not. An agent that never ran leaves no directory: that is no error.
Result<std::string> socket_of(const std::string& dir, pid_t pid) {
  const std::string path = agent_socket_path(dir, pid);
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0)
    return Status::not_found("no Strata agent in pid " + std::to_string(pid) +
                             " (`strata attach` lists them; start a job with `strata record --dormant -- CMD`)");
  if (!S_ISSOCK(st.st_mode) || st.st_uid != ::getuid()) return Status::invalid("refusing " + path + ": not a socket of this user");
  return path;
}

// A count every reply of that kind carries; Invalid when it is missing or not a number.
Status read_count(const Message& reply, const char* key, uint64_t& out) {
  bool bad = false;
  const auto v = get_uint(reply, key, &bad);
  if (!v) return Status::invalid("malformed reply from the agent: no number '" + std::string(key) + "'");
  out = *v;
  return Status::ok();
}

// An agent's error reply: it refused the request, or its recording failed.
Status refusal(const Message& reply) { return Status::io(error_text(reply)); }

Message bare_request(const char* verb) {
  Message m;
  m.verb = verb;
  return m;
}

Message status_request() { return bare_request("status"); }

// A rank or world size a status reply may carry; -1 when it does not (or not as a number).
int64_t reply_rank(const Message& reply, const char* key) {
  bool bad = false;
  const auto v = get_uint(reply, key, &bad);
  return v && *v <= INT_MAX ? static_cast<int64_t>(*v) : -1;
}

void fail(AgentRecording& a, Status why) {
  a.status = std::move(why);
  a.done = true;
  a.state = "failed";
}

// The file a started agent writes: the one asked for; in output_dir, the one the agent named,
// taken only when it is a rank file directly in that directory.
Result<std::string> started_file(const RecordOptions& opt, const Message& reply) {
  if (opt.output_dir.empty()) return opt.output;
  const std::string* named = reply.get("output");
  if (named != nullptr && is_rank_file_in(*named, opt.output_dir)) return *named;
  return Status::invalid("the agent did not name a trace file in " + opt.output_dir);
}

// Reads a status reply of a started recording into `a`: finished when its count of recordings grew.
void follow_status(AgentRecording& a, const Message& status, uint64_t finished_before) {
  uint64_t finished = 0;
  if (is_error(status)) return fail(a, refusal(status));
  if (Status st = read_count(status, "recordings", finished); !st.is_ok()) return fail(a, st);
  if (finished <= finished_before) {
    if (const std::string* state = status.get("state")) a.state = *state;
    bool bad = false;
    if (const auto records = get_uint(status, "records", &bad)) a.records = *records;
    return;
  }
  if (const std::string* e = status.get("error")) return fail(a, Status::io(*e));
  a.result.output = a.output;
  if (Status st = read_count(status, "events", a.result.events); !st.is_ok()) return fail(a, st);
  if (Status st = read_count(status, "dropped", a.result.dropped); !st.is_ok()) return fail(a, st);
  a.done = true;
  a.state = "finished";
}

}  // namespace

std::string absolute_path(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char cwd[PATH_MAX];
  if (::getcwd(cwd, sizeof cwd) == nullptr) return path;
  return std::string(cwd) + "/" + path;
}

Status list_agents(std::vector<AgentInfo>& out) {
  out.clear();
  const std::string dir = socket_dir();
  if (struct stat st {}; ::lstat(dir.c_str(), &st) != 0 && errno == ENOENT) return Status::ok();  // no agent ever ran
  if (Status st = check_private_dir(dir); !st.is_ok()) return st;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return Status::ok();
  std::vector<std::pair<pid_t, Message>> statuses;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() <= 5 || name.compare(name.size() - 5, 5, ".sock") != 0) continue;
    char* end = nullptr;
    const long pid = std::strtol(name.c_str(), &end, 10);
    if (pid > 0 && pid <= INT_MAX && std::string(end) == ".sock")
      statuses.emplace_back(static_cast<pid_t>(pid), status_request());
  }
  ::closedir(d);
  const auto replies = agent_requests(statuses, kRequestTimeoutMs);
  std::string silent;  // one line per agent that did not answer
  for (size_t i = 0; i < replies.size(); ++i) {
    const pid_t pid = statuses[i].first;
    const Result<Message>& reply = replies[i];
    if (!reply.is_ok() || is_error(reply.value())) {
      const std::string path = agent_socket_path(dir, pid);
      struct stat st {};
      const bool dead = ::kill(pid, 0) != 0 && errno == ESRCH;
      if (dead && ::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) && st.st_uid == ::getuid())
        ::unlink(path.c_str());  // a dead job's
      else
        silent += "pid " + std::to_string(pid) + " did not answer: " +
                  (reply.is_ok() ? error_text(reply.value()) : reply.status().message()) + "\n";
      continue;
    }
    AgentInfo a;
    a.pid = pid;
    if (const auto* v = reply->get("command")) a.command = *v;
    if (const auto* v = reply->get("gpu")) a.gpu = *v;
    if (const auto* v = reply->get("state")) a.state = *v;
    if (const auto* v = reply->get("output")) a.output = *v;
    a.rank = reply_rank(reply.value(), "rank");
    a.world_size = reply_rank(reply.value(), "world_size");
    out.push_back(std::move(a));
  }
  return silent.empty() ? Status::ok() : Status::io(std::move(silent));
}

std::vector<Result<Message>> agent_requests(const std::vector<std::pair<pid_t, Message>>& requests, int timeout_ms) {
  const size_t n = requests.size();
  const std::string dir = socket_dir();
  const Status dir_ok = check_private_dir(dir);
  std::vector<PendingRequest> pending(n);
  std::vector<Status> connected(n);
  for (size_t i = 0; i < n; ++i) {
    connected[i] = dir_ok;
    if (!dir_ok.is_ok()) continue;
    const Result<std::string> path = socket_of(dir, requests[i].first);
    connected[i] = path.is_ok() ? pending[i].connect(path.value(), timeout_ms) : path.status();
  }
  for (size_t i = 0; i < n; ++i)
    if (connected[i].is_ok()) pending[i].send(requests[i].second);
  std::vector<Result<Message>> replies;
  replies.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (!connected[i].is_ok()) {
      replies.push_back(connected[i]);
      continue;
    }
    Result<Message> reply = pending[i].reply();
    if (reply.is_ok()) replies.push_back(printable(std::move(reply.value())));
    else replies.push_back(reply.status());
  }
  return replies;
}

Result<Message> agent_request(pid_t pid, const Message& req, int timeout_ms) {
  return std::move(agent_requests({{pid, req}}, timeout_ms)[0]);
}

Message start_request(const RecordOptions& opt) {
  Message m;
  m.verb = "start";
  if (!opt.output_dir.empty()) {
    m.set("output_dir", opt.output_dir);
    if (opt.gzip) m.set("gzip", "1");
  } else {
    m.set("output", opt.output);
  }
  if (opt.duration_ms > 0) m.set("duration_ms", std::to_string(opt.duration_ms));
  if (opt.iterations > 0) m.set("iterations", std::to_string(opt.iterations));
  if (opt.delay_ms > 0) m.set("delay_ms", std::to_string(opt.delay_ms));
  if (!opt.pattern.empty()) m.set("pattern", opt.pattern);
  if (!opt.kinds.empty()) m.set("kinds", opt.kinds);
  if (!opt.metrics.empty()) m.set("metrics", opt.metrics);
  if (!opt.kernels.empty()) m.set("kernels", opt.kernels);
  if (!opt.source.empty()) m.set("source", opt.source);
  return m;
}

std::string describe(const RecordResult& r) {
  if (r.events == 0) return "0 events (the job made no CUDA calls while recording: still starting up, or busy on the CPU?)";
  std::string s = std::to_string(r.events) + " events";
  if (r.dropped > 0) s += ", " + std::to_string(r.dropped) + " records dropped (buffers full)";
  return s;
}

std::string agent_name(const AgentRecording& a) {
  const std::string pid = std::to_string(a.pid);
  return a.rank < 0 ? "pid " + pid : "rank " + std::to_string(a.rank) + " (pid " + pid + ")";
}

bool MultiRecording::finished() const {
  return std::all_of(agents.begin(), agents.end(), [](const AgentRecording& a) { return a.done && a.status.is_ok(); });
}

MultiRecording record_agents(const std::vector<pid_t>& pids, const RecordOptions& opt, const std::atomic<bool>* cancel,
                             const std::function<void(const MultiRecording&)>& progress) {
  MultiRecording m;
  std::vector<uint64_t> finished_before(pids.size(), 0);
  std::vector<std::pair<pid_t, Message>> statuses, starts;
  for (pid_t pid : pids) statuses.emplace_back(pid, status_request());
  const auto before = agent_requests(statuses, kRequestTimeoutMs);
  std::vector<size_t> started;  // indices into m.agents, in the order of `starts`
  for (size_t i = 0; i < pids.size(); ++i) {
    AgentRecording& a = m.agents.emplace_back();
    a.pid = pids[i];
    Status st = before[i].status();
    if (before[i].is_ok())
      st = is_error(before[i].value()) ? refusal(before[i].value()) : read_count(before[i].value(), "recordings", finished_before[i]);
    if (st.is_ok()) {
      a.rank = reply_rank(before[i].value(), "rank");
      starts.emplace_back(a.pid, start_request(opt));
      started.push_back(i);
    } else {
      fail(a, st);
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  const auto replies = agent_requests(starts, kRequestTimeoutMs);
  m.start_window_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  for (size_t k = 0; k < started.size(); ++k) {
    AgentRecording& a = m.agents[started[k]];
    if (!replies[k].is_ok()) {
      fail(a, replies[k].status());
    } else if (is_error(replies[k].value())) {
      fail(a, refusal(replies[k].value()));
    } else {
      const Result<std::string> file = started_file(opt, replies[k].value());
      if (file.is_ok()) a.output = file.value();
      else fail(a, file.status());
    }
    if (!a.done) a.state = "starting";
  }
  if (progress) progress(m);
  std::vector<bool> stop_sent(pids.size(), false);
  for (;;) {
    std::vector<size_t> running;
    for (size_t i = 0; i < m.agents.size(); ++i)
      if (!m.agents[i].done) running.push_back(i);
    if (running.empty()) return m;
    if (cancel != nullptr && cancel->load()) {
      std::vector<std::pair<pid_t, Message>> stops;
      std::vector<size_t> stopping;
      for (size_t i : running) {
        if (stop_sent[i]) continue;
        stop_sent[i] = true;
        stops.emplace_back(m.agents[i].pid, bare_request("stop"));
        stopping.push_back(i);
      }
      const auto stopped = agent_requests(stops, kStopTimeoutMs);
      for (size_t k = 0; k < stopping.size(); ++k) {
        if (!stopped[k].is_ok()) fail(m.agents[stopping[k]], stopped[k].status());
        else if (is_error(stopped[k].value()) && error_text(stopped[k].value()) != "not recording")
          fail(m.agents[stopping[k]], refusal(stopped[k].value()));
      }
    }
    statuses.clear();
    std::vector<size_t> asked;
    for (size_t i : running) {
      if (m.agents[i].done) continue;  // its stop failed
      statuses.emplace_back(m.agents[i].pid, status_request());
      asked.push_back(i);
    }
    const auto now = agent_requests(statuses, kRequestTimeoutMs);
    for (size_t k = 0; k < asked.size(); ++k) {
      AgentRecording& a = m.agents[asked[k]];
      if (!now[k].is_ok()) fail(a, Status(now[k].status().code(), "the job ended or stopped answering: " + now[k].status().message()));
      else follow_status(a, now[k].value(), finished_before[asked[k]]);
    }
    if (progress) progress(m);
    if (std::all_of(m.agents.begin(), m.agents.end(), [](const AgentRecording& a) { return a.done; })) return m;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

Result<RecordResult> record_from_agent(pid_t pid, const RecordOptions& opt, const std::atomic<bool>* cancel,
                                      const std::function<void(const std::string&)>& progress) {
  std::string last_state;
  const auto tell = [&](const MultiRecording& m) {
    const AgentRecording& a = m.agents[0];
    if (!progress || a.state.empty() || a.state == last_state || a.state == "failed" || a.state == "finished") return;
    // The file is the one asked for: nothing in a reply decides what the client opens.
    if (last_state.empty()) progress("recording pid " + std::to_string(pid) + " into " + printable_text(a.output));
    else progress("agent state: " + a.state);
    last_state = a.state;
  };
  const MultiRecording m = record_agents({pid}, opt, cancel, tell);
  const AgentRecording& a = m.agents[0];
  if (!a.status.is_ok()) return a.status;
  return a.result;
}

}  // namespace strata::collector
