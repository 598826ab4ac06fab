// Kineto's ipcfabric messages against the wire layout, and a full exchange with a
// process playing libkineto's IpcFabricConfigClient.
#include <doctest/doctest.h>

#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "client/kineto_ipc.h"
#include "require_ok.h"

using namespace strata::collector::kineto;
using strata::Status;
using strata::test::require_ok;

namespace {

uint64_t u64_at(const std::vector<uint8_t>& b, size_t at) {
  uint64_t v;
  std::memcpy(&v, b.data() + at, sizeof v);
  return v;
}
int32_t i32_at(const std::vector<uint8_t>& b, size_t at) {
  int32_t v;
  std::memcpy(&v, b.data() + at, sizeof v);
  return v;
}

// Child: registers and asks for a config the way libkineto does; exit code 0 when the
// config it receives is `expected`.
[[noreturn]] void play_kineto(int32_t ancestor, const std::string& expected) {
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM, 0);
  sockaddr_un self{}, daemon{};
  const auto self_len = static_cast<socklen_t>(endpoint_address("dynoconfigclient-" + std::to_string(getpid()), &self));
  const auto daemon_len = static_cast<socklen_t>(endpoint_address("dynolog", &daemon));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&self), self_len) != 0) ::_exit(2);
  auto exchange = [&](const std::vector<uint8_t>& msg, std::vector<uint8_t>& reply) {
    if (::sendto(fd, msg.data(), msg.size(), 0, reinterpret_cast<sockaddr*>(&daemon), daemon_len) < 0) return false;
    reply.resize(1 << 16);
    timeval tv{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    const ssize_t n = ::recv(fd, reply.data(), reply.size(), 0);
    if (n <= 0) return false;
    reply.resize(static_cast<size_t>(n));
    return true;
  };
  std::vector<uint8_t> reply;
  const auto ctxt = encode_context(Context{0, static_cast<int32_t>(getpid()), 0});
  if (!exchange(encode("ctxt", ctxt.data(), ctxt.size()), reply)) ::_exit(3);
  auto got = decode(reply.data(), reply.size());
  if (!got.is_ok() || got->type != "ctxt" || got->payload.size() != 4) ::_exit(4);
  Request req;
  req.type = kConfigActivities | 1;
  req.pids = {static_cast<int32_t>(getpid()), ancestor};
  const auto body = encode_request(req);
  if (!exchange(encode("req", body.data(), body.size()), reply)) ::_exit(5);
  got = decode(reply.data(), reply.size());
  if (!got.is_ok() || got->type != "req") ::_exit(6);
  const std::string config(got->payload.begin(), got->payload.end());
  ::unlink(self.sun_path);
  ::_exit(config == expected ? 0 : 7);
}

}  // namespace

TEST_CASE("ipcfabric datagrams follow dynolog's layout") {
  const std::string text = "ACTIVITIES_DURATION_MSECS=500\n";
  const auto d = encode("req", text.data(), text.size());
  REQUIRE(d.size() == 40 + text.size());
  CHECK(u64_at(d, 0) == text.size());  // Metadata::size (size_t)
  CHECK(std::string(reinterpret_cast<const char*>(d.data() + 8)) == "req");  // Metadata::type[32]
  CHECK(d[8 + 31] == 0);
  CHECK(std::string(d.begin() + 40, d.end()) == text);
  const Datagram back = require_ok(decode(d.data(), d.size()));
  CHECK(back.type == "req");
  CHECK(back.payload.size() == text.size());
  CHECK_FALSE(decode(d.data(), 39).is_ok());  // shorter than the header
  const auto disagrees = decode(d.data(), d.size() - 1);  // size field disagrees
  CHECK_FALSE(disagrees.is_ok());
  CHECK(disagrees.status().message().find("does not match") != std::string::npos);

  Request r;
  r.type = kConfigActivities;
  r.jobid = 77;
  r.pids = {10, 1};
  const auto body = encode_request(r);
  REQUIRE(body.size() == 16 + 2 * 4);  // {int type; int n; int64 jobid; int32 pids[]}
  CHECK(i32_at(body, 0) == 2);
  CHECK(i32_at(body, 4) == 2);
  CHECK(u64_at(body, 8) == 77);
  CHECK(i32_at(body, 16) == 10);
  auto rb = decode_request(body);
  REQUIRE(rb);
  CHECK(rb->pids == std::vector<int32_t>{10, 1});
  CHECK_FALSE(decode_request(std::vector<uint8_t>(body.begin(), body.end() - 1)));

  const auto ctx = encode_context(Context{3, 1234, 9});
  REQUIRE(ctx.size() == 16);  // {int32 gpu; pid_t pid; int64 jobid}
  auto cb = decode_context(ctx);
  REQUIRE(cb);
  CHECK(cb->gpu == 3);
  CHECK(cb->pid == 1234);
}

TEST_CASE("the on-demand config and the file name Kineto writes") {
  const std::string c = trace_config(500, 0, "/tmp/t.pt.trace.json");
  CHECK(c.find("ACTIVITIES_DURATION_MSECS=500\n") != std::string::npos);
  CHECK(c.find("ACTIVITIES_LOG_FILE=/tmp/t.pt.trace.json\n") != std::string::npos);
  // A warm-up Kineto needs: with 0 the window fell into CUPTI's start-up stall and the
  // trace held only metadata (PyTorch 2.11, H100).
  CHECK(c.find("ACTIVITIES_WARMUP_PERIOD_SECS=5\n") != std::string::npos);
  CHECK(c.find("ACTIVITIES_WARMUP_PERIOD_SECS=0") == std::string::npos);
  CHECK(c.find("PROFILE_START_TIME=0\n") != std::string::npos);
  const std::string it = trace_config(0, 3, "/tmp/x.json");
  CHECK(it.find("ACTIVITIES_ITERATIONS=3\n") != std::string::npos);
  CHECK(it.find("PROFILE_START_ITERATION=0\n") != std::string::npos);
  CHECK(it.find("PROFILE_START_ITERATION_ROUNDUP=1\n") != std::string::npos);
  CHECK(it.find("ACTIVITIES_DURATION_MSECS") == std::string::npos);
  const auto names = written_names("/tmp/t.pt.trace.json", 42);
  CHECK(names == std::vector<std::string>{"/tmp/t.pt.trace.json", "/tmp/t_42.pt.trace.json"});
}

TEST_CASE("a process speaking libkineto's side gets the config from our daemon") {
  char tmpl[] = "/tmp/strata-kineto-XXXXXX";
  const char* dir = ::mkdtemp(tmpl);
  REQUIRE(dir != nullptr);
  ::setenv("KINETO_IPC_SOCKET_DIR", dir, 1);  // filesystem sockets: no clash with a real dynolog
  Daemon daemon;
  const Status bound = daemon.bind("dynolog");
  REQUIRE_MESSAGE(bound.is_ok(), bound.message());
  const std::string config = trace_config(250, 0, "/tmp/out.pt.trace.json");
  const int32_t ancestor = ::getpid();  // the pid asked for is the job's parent, as with launchers
  const pid_t job = ::fork();
  REQUIRE(job >= 0);
  if (job == 0) play_kineto(ancestor, config);
  std::vector<std::string> log;
  const Status delivered = daemon.deliver(ancestor, config, 10000, [&](const std::string& l) { log.push_back(l); });
  CHECK_MESSAGE(delivered.is_ok(), delivered.message());
  int status = 0;
  ::waitpid(job, &status, 0);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(log.size() == 1);  // the registration
  ::unsetenv("KINETO_IPC_SOCKET_DIR");
  ::rmdir(dir);
}

TEST_CASE("a second daemon on the same endpoint is refused clearly") {
  Daemon a, b;
  REQUIRE(a.bind("strata-test-" + std::to_string(getpid())).is_ok());
  const Status second = b.bind("strata-test-" + std::to_string(getpid()));
  CHECK_FALSE(second.is_ok());
  CHECK(second.message().find("dynolog daemon running") != std::string::npos);
}
