#include "helpers.h"

#include <doctest/doctest.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "client/agents.h"
#include "protocol/control_socket.h"

namespace strata::collector::test {

Message message(std::string verb) {
  Message m;
  m.verb = std::move(verb);
  return m;
}

Message ask(pid_t pid, const Message& request, int timeout_ms) {
  Result<Message> reply = agent_request(pid, request, timeout_ms);
  REQUIRE_MESSAGE(reply.is_ok(), request.verb << ": " << reply.status().message());
  return std::move(reply.value());
}

std::string field(const Message& m, const char* key) {
  const std::string* v = m.get(key);
  return v != nullptr ? *v : std::string();
}

std::vector<AgentInfo> listed_agents() {
  std::vector<AgentInfo> agents;
  [[maybe_unused]] const Status listed = list_agents(agents);
  return agents;
}

std::string wait_for_status(pid_t pid, const char* key, const std::string& want, int timeout_ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  std::string now;
  while (std::chrono::steady_clock::now() < until) {
    now = field(ask(pid, "status"), key);
    if (now == want) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return now;
}

sockaddr_un unix_address(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  return addr;
}

int connect_unix(const std::string& path, int flags) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | flags, 0);
  const sockaddr_un addr = unix_address(path);
  if (fd >= 0 && ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) return fd;
  if (fd >= 0) ::close(fd);
  return -1;
}

std::string raw_exchange(const std::string& path, const std::string& bytes, bool half_close) {
  const int fd = connect_unix(path);
  REQUIRE_MESSAGE(fd >= 0, "cannot connect to " << path);
  write_all(fd, bytes, 1000);
  if (half_close) ::shutdown(fd, SHUT_WR);
  const Result<std::string> line = read_line(fd, 5000);
  ::close(fd);
  return line.is_ok() ? line.value() : std::string();
}

TempDir::TempDir(mode_t mode) {
  std::string tmpl = "/tmp/strata-fault-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) return;
  path_ = tmpl;
  ::chmod(path_.c_str(), mode);
}

TempDir::~TempDir() {
  std::error_code ec;
  if (!path_.empty()) std::filesystem::remove_all(path_, ec);
}

ScopedEnv::ScopedEnv(std::string name, const std::optional<std::string>& value) : name_(std::move(name)) {
  if (const char* old = std::getenv(name_.c_str())) old_ = old;
  if (value) ::setenv(name_.c_str(), value->c_str(), 1);
  else ::unsetenv(name_.c_str());
}

ScopedEnv::~ScopedEnv() {
  if (old_) ::setenv(name_.c_str(), old_->c_str(), 1);
  else ::unsetenv(name_.c_str());
}

std::vector<std::string> as_other_user(const std::vector<std::string>& argv, std::string* why) {
  if (::getuid() != 0) {
    *why = "needs root to run a process as another uid (setpriv); skipped";
    return {};
  }
  for (const char* setpriv : {"/usr/bin/setpriv", "/bin/setpriv"}) {
    if (::access(setpriv, X_OK) != 0) continue;
    std::vector<std::string> out = {setpriv, "--reuid=" + std::to_string(kOtherUid),
                                    "--regid=" + std::to_string(kOtherUid), "--clear-groups", "--"};
    out.insert(out.end(), argv.begin(), argv.end());
    return out;
  }
  *why = "setpriv (util-linux) is not installed: cannot run a process as another uid; skipped";
  return {};
}

std::string runnable_copy(const std::string& binary, const TempDir& dir) {
  const std::string copy = dir / std::filesystem::path(binary).filename().string();
  std::error_code ec;
  std::filesystem::copy_file(binary, copy, std::filesystem::copy_options::overwrite_existing, ec);
  ::chmod(copy.c_str(), 0755);
  return copy;
}

}  // namespace strata::collector::test
