// strata_intruder: another user's process, for the fault-injection tests (run through
// `setpriv --reuid`). It does what a hostile local user could:
//
//   strata_intruder agent-dir DIR PID VICTIM_UID SECONDS
//       creates DIR first (mode 0777, as if it were /tmp/strata-<victim uid>) and serves a fake
//       agent at DIR/PID.sock, to VICTIM_UID, whose replies carry terminal escape sequences;
//       prints "ready", then after SECONDS "requests N" (how many requests reached it).
//   strata_intruder kineto-request ENDPOINT PID
//       asks the ipcfabric endpoint ENDPOINT for the config meant for PID, as if it were that
//       job; exits 0 if it got a non-empty config, 1 for an empty one, 2 for no answer.
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "client/kineto_ipc.h"
#include "protocol/control_socket.h"

namespace sc = strata::collector;

namespace {

int agent_dir(const std::string& dir, pid_t pid, uid_t victim, double seconds) {
  ::mkdir(dir.c_str(), 0777);
  ::chmod(dir.c_str(), 0777);
  sc::ControlServer server;
  if (const strata::Status st = server.listen(sc::agent_socket_path(dir, pid), victim); !st.is_ok()) {
    std::fprintf(stderr, "intruder: %s\n", st.message().c_str());
    return 1;
  }
  ::chmod(sc::agent_socket_path(dir, pid).c_str(), 0777);
  std::printf("ready\n");
  std::fflush(stdout);
  int requests = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
    server.serve(-1, 50, [&](const sc::Message&) {
      ++requests;
      sc::Message m;
      m.verb = "ok";
      m.set("command", "\x1b]0;owned\x07\x1b[2Jrm -rf ~").set("state", "dormant").set("recordings", "0");
      return m;
    });
  }
  std::printf("requests %d\n", requests);
  return 0;
}

int kineto_request(const std::string& endpoint, pid_t target) {
  namespace k = sc::kineto;
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM, 0);
  sockaddr_un self{}, daemon{};
  const auto self_len = static_cast<socklen_t>(k::endpoint_address("strata-intruder-" + std::to_string(::getpid()), &self));
  const auto daemon_len = static_cast<socklen_t>(k::endpoint_address(endpoint, &daemon));
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&self), self_len) != 0) return 3;
  k::Request req;
  req.type = k::kConfigActivities;
  req.pids = {static_cast<int32_t>(::getpid()), static_cast<int32_t>(target)};
  const auto body = k::encode_request(req);
  const auto msg = k::encode("req", body.data(), body.size());
  if (::sendto(fd, msg.data(), msg.size(), 0, reinterpret_cast<sockaddr*>(&daemon), daemon_len) < 0) return 3;
  timeval tv{1, 500000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char reply[1 << 16];
  const ssize_t n = ::recv(fd, reply, sizeof reply, 0);
  if (n <= 0) return 2;
  return static_cast<size_t>(n) > k::kHeaderBytes ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "agent-dir" && argc == 6)
    return agent_dir(argv[2], static_cast<pid_t>(std::atoi(argv[3])), static_cast<uid_t>(std::atoi(argv[4])),
                     std::atof(argv[5]));
  if (mode == "kineto-request" && argc == 4) return kineto_request(argv[2], static_cast<pid_t>(std::atoi(argv[3])));
  std::fputs("usage: strata_intruder agent-dir DIR PID VICTIM_UID SECONDS | kineto-request ENDPOINT PID\n", stderr);
  return 2;
}
