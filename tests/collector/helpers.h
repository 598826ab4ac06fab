// What the collector's tests share: requests to an agent, temporary directories and
// environment variables that clean up after themselves, and running a process as another
// user (setpriv, as root).
#pragma once

#include <sys/types.h>
#include <sys/un.h>

#include <optional>
#include <string>
#include <vector>

#include "client/agents.h"
#include "protocol/message.h"

namespace strata::collector::test {

inline constexpr uid_t kOtherUid = 65534;  // nobody

Message message(std::string verb);  // a request or reply without fields
// One request to pid's agent (agent_request); the test fails when no reply comes.
Message ask(pid_t pid, const Message& request, int timeout_ms = 5000);
inline Message ask(pid_t pid, const std::string& verb, int timeout_ms = 5000) {
  return ask(pid, message(verb), timeout_ms);
}
std::string field(const Message& m, const char* key);  // "" when absent
// list_agents' agents alone, for the checks that take what there is (its status, which says
// which agents did not answer, is dropped).
std::vector<AgentInfo> listed_agents();
// Asks pid's agent for its status until `key` reads `want` (at most `timeout_ms`); returns
// the last value read.
std::string wait_for_status(pid_t pid, const char* key, const std::string& want, int timeout_ms = 10000);

sockaddr_un unix_address(const std::string& path);
// A Unix stream socket connected to `path` (`flags` for socket(), e.g. SOCK_NONBLOCK); -1 when
// connect() fails.
int connect_unix(const std::string& path, int flags = 0);
// Sends `bytes` (possibly malformed) to the socket at `path`, shutting down the sending side
// after them with `half_close`, and returns the reply line ("" when none came).
std::string raw_exchange(const std::string& path, const std::string& bytes, bool half_close = false);

// A fresh directory under /tmp, removed with its contents at the end of the scope.
class TempDir {
 public:
  explicit TempDir(mode_t mode = 0700);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Sets (or with nullopt unsets) an environment variable until the end of the scope.
class ScopedEnv {
 public:
  ScopedEnv(std::string name, const std::optional<std::string>& value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

// `argv` run as kOtherUid through setpriv; empty, with `why`, where that cannot be done (the
// tests run as another user only when they run as root and setpriv is installed).
std::vector<std::string> as_other_user(const std::vector<std::string>& argv, std::string* why);

// A copy of `binary` in `dir` that any user may run (the build tree may be private).
std::string runnable_copy(const std::string& binary, const TempDir& dir);

}  // namespace strata::collector::test
