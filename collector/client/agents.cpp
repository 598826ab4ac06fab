#include "agents.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <thread>

#include "core/base/utf8.h"
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
// else "" with `error` saying why. An agent that never ran leaves no directory: that is no error.
std::string socket_of(const std::string& dir, pid_t pid, std::string* error) {
  const std::string path = agent_socket_path(dir, pid);
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    *error = "no Strata agent in pid " + std::to_string(pid) +
             " (`strata attach` lists them; start a job with `strata record --dormant -- CMD`)";
    return "";
  }
  if (!S_ISSOCK(st.st_mode) || st.st_uid != ::getuid()) {
    *error = "refusing " + path + ": not a socket of this user";
    return "";
  }
  return path;
}

std::optional<Message> ask(const std::string& path, const Message& req, int timeout_ms, std::string* error) {
  auto reply = request(path, req, timeout_ms, error);
  if (!reply) return std::nullopt;
  return printable(std::move(*reply));
}

// A count every reply of that kind carries; false with `error` when it is missing or not a number.
bool read_count(const Message& reply, const char* key, uint64_t& out, std::string* error) {
  bool bad = false;
  const auto v = get_uint(reply, key, &bad);
  if (v) out = *v;
  else *error = "malformed reply from the agent: no number '" + std::string(key) + "'";
  return v.has_value();
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
  std::string why;
  if (struct stat st {}; ::lstat(dir.c_str(), &st) != 0 && errno == ENOENT) return out;  // no agent ever ran
  if (!check_private_dir(dir, &why)) {
    if (error != nullptr) *error += why + "\n";
    return out;
  }
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  std::vector<pid_t> pids;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() <= 5 || name.compare(name.size() - 5, 5, ".sock") != 0) continue;
    char* end = nullptr;
    const long pid = std::strtol(name.c_str(), &end, 10);
    if (pid > 0 && pid <= INT_MAX && std::string(end) == ".sock") pids.push_back(static_cast<pid_t>(pid));
  }
  ::closedir(d);
  Message status;
  status.verb = "status";
  for (pid_t pid : pids) {
    const std::string path = socket_of(dir, pid, &why);
    auto reply = path.empty() ? std::nullopt : ask(path, status, kRequestTimeoutMs, &why);
    if (reply && is_error(*reply)) why = error_text(*reply);
    if (!reply || is_error(*reply)) {
      if (!path.empty() && ::kill(pid, 0) != 0 && errno == ESRCH) ::unlink(path.c_str());  // a dead job's
      else if (error != nullptr) *error += "pid " + std::to_string(pid) + " did not answer: " + why + "\n";
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
  const std::string dir = socket_dir();
  if (!check_private_dir(dir, error)) return std::nullopt;
  const std::string path = socket_of(dir, pid, error);
  if (path.empty()) return std::nullopt;
  return ask(path, req, timeout_ms, error);
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
  uint64_t finished_before = 0;
  if (is_error(*before)) {
    *error = error_text(*before);
    return std::nullopt;
  }
  if (!read_count(*before, "recordings", finished_before, error)) return std::nullopt;
  auto started = agent_request(pid, start_request(opt), kRequestTimeoutMs, error);
  if (!started) return std::nullopt;
  if (is_error(*started)) {
    *error = error_text(*started);
    return std::nullopt;
  }
  // The file is the one asked for: nothing in a reply decides what the client opens.
  if (progress) progress("recording pid " + std::to_string(pid) + " into " + printable_text(opt.output));
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
    uint64_t finished = 0;
    if (is_error(*now)) {
      *error = error_text(*now);
      return std::nullopt;
    }
    if (!read_count(*now, "recordings", finished, error)) return std::nullopt;
    if (finished > finished_before) {
      if (const auto* e = now->get("error")) {
        *error = *e;
        return std::nullopt;
      }
      RecordResult r;
      r.output = opt.output;
      if (!read_count(*now, "events", r.events, error) || !read_count(*now, "dropped", r.dropped, error))
        return std::nullopt;
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
