#include "agents.h"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <thread>

#include "protocol/control_socket.h"

namespace strata::collector {

namespace {
constexpr int kRequestTimeoutMs = 3000;
constexpr int kStopTimeoutMs = 120000;  // stop flushes and writes the whole file

uint64_t field_uint(const Message& m, const char* key) {
  bool bad = false;
  return get_uint(m, key, &bad).value_or(0);
}
}  // namespace

std::string absolute_path(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char cwd[PATH_MAX];
  if (::getcwd(cwd, sizeof cwd) == nullptr) return path;
  return std::string(cwd) + "/" + path;
}

std::vector<AgentInfo> list_agents(std::string* error) {
  std::vector<AgentInfo> out;
  const std::string dir = socket_dir();
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;  // no agent ever ran for this user
  std::vector<pid_t> pids;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() <= 5 || name.compare(name.size() - 5, 5, ".sock") != 0) continue;
    char* end = nullptr;
    const long pid = std::strtol(name.c_str(), &end, 10);
    if (pid > 0 && std::string(end) == ".sock") pids.push_back(static_cast<pid_t>(pid));
  }
  ::closedir(d);
  Message status;
  status.verb = "status";
  for (pid_t pid : pids) {
    std::string err;
    auto reply = request(agent_socket_path(dir, pid), status, kRequestTimeoutMs, &err);
    if (!reply) {
      if (::kill(pid, 0) != 0 && errno == ESRCH) ::unlink(agent_socket_path(dir, pid).c_str());
      else if (error != nullptr) *error += "pid " + std::to_string(pid) + ": " + err + "\n";
      continue;
    }
    AgentInfo a;
    a.pid = pid;
    if (const auto* v = reply->get("command")) a.command = *v;
    if (const auto* v = reply->get("gpu")) a.gpu = *v;
    if (const auto* v = reply->get("state")) a.state = *v;
    if (const auto* v = reply->get("output")) a.output = *v;
    out.push_back(std::move(a));
  }
  return out;
}

std::optional<Message> agent_request(pid_t pid, const Message& req, int timeout_ms, std::string* error) {
  const std::string path = agent_socket_path(socket_dir(), pid);
  if (::access(path.c_str(), F_OK) != 0) {
    *error = "no Strata agent in pid " + std::to_string(pid) +
             " (`strata attach` lists them; start a job with `strata record --dormant -- CMD`)";
    return std::nullopt;
  }
  return request(path, req, timeout_ms, error);
}

Message start_request(const RecordOptions& opt) {
  Message m;
  m.verb = "start";
  m.set("output", opt.output);
  if (opt.duration_ms > 0) m.set("duration_ms", std::to_string(opt.duration_ms));
  if (opt.iterations > 0) m.set("iterations", std::to_string(opt.iterations));
  if (opt.delay_ms > 0) m.set("delay_ms", std::to_string(opt.delay_ms));
  if (!opt.pattern.empty()) m.set("pattern", opt.pattern);
  if (!opt.kinds.empty()) m.set("kinds", opt.kinds);
  if (!opt.source.empty()) m.set("source", opt.source);
  return m;
}

std::string describe(const RecordResult& r) {
  if (r.events == 0) return "0 events (the job made no CUDA calls while recording: still starting up, or busy on the CPU?)";
  std::string s = std::to_string(r.events) + " events";
  if (r.dropped > 0) s += ", " + std::to_string(r.dropped) + " records dropped (buffers full)";
  return s;
}

std::optional<RecordResult> record_from_agent(pid_t pid, const RecordOptions& opt, const std::atomic<bool>* cancel,
                                              const std::function<void(const std::string&)>& progress,
                                              std::string* error) {
  Message status;
  status.verb = "status";
  auto before = agent_request(pid, status, kRequestTimeoutMs, error);
  if (!before) return std::nullopt;
  if (is_error(*before)) {
    *error = error_text(*before);
    return std::nullopt;
  }
  const uint64_t finished_before = field_uint(*before, "recordings");
  auto started = agent_request(pid, start_request(opt), kRequestTimeoutMs, error);
  if (!started) return std::nullopt;
  if (is_error(*started)) {
    *error = error_text(*started);
    return std::nullopt;
  }
  if (progress) progress("recording pid " + std::to_string(pid) + " into " + *started->get("output"));
  std::string last_state;
  for (;;) {
    if (cancel != nullptr && cancel->load()) {
      Message stop;
      stop.verb = "stop";
      auto reply = agent_request(pid, stop, kStopTimeoutMs, error);
      if (!reply) return std::nullopt;
      if (is_error(*reply) && error_text(*reply) != "not recording") {
        *error = error_text(*reply);
        return std::nullopt;
      }
    }
    auto now = agent_request(pid, status, kRequestTimeoutMs, error);
    if (!now) {
      *error = "the job ended or stopped answering: " + *error;
      return std::nullopt;
    }
    if (field_uint(*now, "recordings") > finished_before) {
      if (const auto* e = now->get("error")) {
        *error = *e;
        return std::nullopt;
      }
      RecordResult r;
      if (const auto* o = now->get("output")) r.output = *o;
      r.events = field_uint(*now, "events");
      r.dropped = field_uint(*now, "dropped");
      return r;
    }
    const std::string* st = now->get("state");
    if (progress && st != nullptr && *st != last_state) {
      last_state = *st;
      progress("agent state: " + last_state);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

}  // namespace strata::collector
