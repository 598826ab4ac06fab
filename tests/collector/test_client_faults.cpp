// Fault injection, the client side: what `strata attach`, the viewer's Attach dialog and
// `strata attach --kineto` meet from agents that are busy, broken, forged or another user's.
// Each test names the fault class of collector/README.md ("Faults the collector survives").
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "child_process.h"
#include "client/agents.h"
#include "client/attach_session.h"
#include "client/kineto_ipc.h"
#include "helpers.h"
#include "protocol/control_socket.h"
#include "require_ok.h"

using namespace strata::collector;
using namespace strata::collector::test;
using strata::Result;
using strata::Status;
using strata::test::require_ok;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

Message parse(const std::string& line) { return require_ok(decode_message(line)); }

// Valid UTF-8 without C0, DEL or C1 controls: safe to print or draw.
bool printable(const std::string& s) {
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f || c == 0x9b || c == 0x1b) return false;
    if (c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) < 0xa0) return false;
  }
  return true;
}

// A fake agent on a thread of this process, answering at <dir>/<pid>.sock with `handle`.
class ScriptedAgent {
 public:
  ScriptedAgent(const std::string& dir, pid_t pid, ControlServer::Handler handle) {
    const Status listening = server_.listen(agent_socket_path(dir, pid), ::getuid());
    REQUIRE_MESSAGE(listening.is_ok(), listening.message());
    thread_ = std::thread([this, handle = std::move(handle)] {
      while (!stop_.load()) server_.serve(-1, 20, [&](const Message& req) {
          ++requests;
          return handle(req);
        });
    });
  }
  ~ScriptedAgent() {
    stop_.store(true);
    thread_.join();
  }
  std::atomic<int> requests{0};

 private:
  ControlServer server_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// A socket that listens at `path` and never accepts: its clients wait for a reply in vain.
int silent_listener(const std::string& path, int backlog) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const sockaddr_un addr = unix_address(path);
  REQUIRE(::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::listen(fd, backlog) == 0);
  return fd;
}

}  // namespace

TEST_CASE("faults 6-9, the protocol: unknown keys are named, NUL refused, CRLF accepted, values bounded") {
  // 8: a CRLF line ending is a line ending; NUL (which would cut the path the agent opens
  // short of the one it reports) and raw control bytes are refused.
  CHECK(parse("status\r\n").verb == "status");
  CHECK(*parse("start output=/tmp/a.json\r\n").get("output") == "/tmp/a.json");
  const Result<Message> nul = decode_message("start output=/tmp/a%00b.json\n");
  CHECK_FALSE(nul.is_ok());
  CHECK(nul.status().message().find("NUL") != std::string::npos);
  CHECK_FALSE(decode_message("start output=/tmp/a\rb\n").is_ok());
  CHECK_FALSE(decode_message("status\r\r\n").is_ok());
  // 6: a misspelt key is named, with the keys there are.
  const Status misspelt = check_keys(parse("start duraton_ms=500 output=/x"), {"output", "duration_ms"});
  CHECK_FALSE(misspelt.is_ok());
  CHECK(misspelt.message().find("'duraton_ms'") != std::string::npos);
  CHECK(misspelt.message().find("duration_ms") != std::string::npos);
  CHECK_FALSE(check_keys(parse("status verbose=1"), {}).is_ok());
  CHECK(check_keys(parse("start output=/x"), {"output"}).is_ok());
  // 9: what goes into a reply is cut to fit, at a UTF-8 boundary, so a reply is one line.
  const std::string long_text(3 * kMaxMessageBytes, 'x');
  CHECK(encode_message(error_reply(long_text)).size() < kMaxMessageBytes);
  CHECK(encoded_size(fit_value(std::string(600, ' '))) <= kMaxTextBytes);  // spaces escape to 3 bytes
  const std::string cut = fit_value("\xc3\xa9\xc3\xa9\xc3\xa9", 5);
  CHECK(cut == "\xc3\xa9\xc3\xa9");
  CHECK(fit_value("short") == "short");
}

TEST_CASE("fault 11: an agent whose connection queue is full costs a client its deadline, not forever") {
  TempDir dir;
  ScopedEnv socket_dir("STRATA_SOCKET_DIR", dir.path());
  const int listener = silent_listener(agent_socket_path(dir.path(), ::getpid()), 0);
  std::vector<int> queued;  // fill the queue: the next connect() would block for as long as nobody accepts
  for (int i = 0; i < 16; ++i) {
    const int c = connect_unix(agent_socket_path(dir.path(), ::getpid()), SOCK_NONBLOCK);
    if (c < 0) break;
    queued.push_back(c);
  }
  const auto t0 = Clock::now();
  const Result<Message> reply = agent_request(::getpid(), message("status"), 500);
  CHECK_FALSE(reply.is_ok());
  CHECK(seconds_since(t0) < 5);  // 0.5 s asked for; a blocking connect() would never return
  CHECK(reply.status().message().find("queue of connections is full") != std::string::npos);
  // The viewer's scan and `strata attach` go through the same requests.
  const auto t1 = Clock::now();
  std::vector<AgentInfo> agents;
  const Status listed = list_agents(agents);
  CHECK(agents.empty());
  CHECK(seconds_since(t1) < 10);
  CHECK(listed.message().find("pid " + std::to_string(::getpid()) + " did not answer") != std::string::npos);
  for (int c : queued) ::close(c);
  ::close(listener);
}

TEST_CASE("fault 12: a socket directory that is not private or not this user's is refused before any request") {
  TempDir base(0755);
  std::vector<AgentInfo> agents;
  SUBCASE("others may write to it") {
    const std::string dir = base / "sockets";
    REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
    ScriptedAgent agent(dir, ::getpid(), [](const Message&) { return message("ok"); });
    REQUIRE(::chmod(dir.c_str(), 0777) == 0);
    ScopedEnv socket_dir("STRATA_SOCKET_DIR", dir);
    const Status listed = list_agents(agents);
    CHECK(agents.empty());
    CHECK(listed.message().find("refusing to use " + dir) != std::string::npos);
    const Result<Message> reply = agent_request(::getpid(), message("status"), 1000);
    CHECK_FALSE(reply.is_ok());
    CHECK(reply.status().message().find("mode 0700") != std::string::npos);
    CHECK(agent.requests == 0);
  }
  SUBCASE("it is a symlink to a private directory") {
    const std::string real = base / "real";
    REQUIRE(::mkdir(real.c_str(), 0700) == 0);
    ScriptedAgent agent(real, ::getpid(), [](const Message&) { return message("ok"); });
    REQUIRE(::symlink(real.c_str(), (base / "link").c_str()) == 0);
    ScopedEnv socket_dir("STRATA_SOCKET_DIR", base / "link");
    const Status listed = list_agents(agents);
    CHECK(agents.empty());
    CHECK(listed.message().find("not a directory") != std::string::npos);
    CHECK(agent.requests == 0);
  }
  SUBCASE("another user created it first, with a fake agent inside") {
    TempDir shared_tmp(01777);  // like /tmp
    TempDir bin(0755);
    std::string why;
    const std::string dir = shared_tmp / "strata-victim";
    const auto argv = as_other_user({runnable_copy(STRATA_INTRUDER, bin), "agent-dir", dir, std::to_string(::getpid()),
                                     std::to_string(::getuid()), "2"},
                                    &why);
    if (argv.empty()) {
      MESSAGE(why);
      return;
    }
    ChildProcess intruder;
    REQUIRE_MESSAGE(intruder.start(argv), intruder.error());
    REQUIRE_MESSAGE(intruder.wait_for_output("ready\n", 10000), intruder.err());
    ScopedEnv socket_dir("STRATA_SOCKET_DIR", dir);
    const Status listed = list_agents(agents);
    CHECK(agents.empty());
    CHECK(listed.message().find("owned by uid " + std::to_string(kOtherUid)) != std::string::npos);
    CHECK_FALSE(agent_request(::getpid(), message("status"), 1000).is_ok());
    REQUIRE(intruder.wait(10000));
    CHECK(intruder.out().find("requests 0") != std::string::npos);  // nothing ever reached it
  }
}

TEST_CASE("fault 12: an agent socket served by another uid is refused (SO_PEERCRED)") {
  if (::getuid() != 0) {
    MESSAGE("needs root to serve a socket as another uid; skipped");
    return;
  }
  TempDir dir;
  ScopedEnv socket_dir("STRATA_SOCKET_DIR", dir.path());
  const std::string path = agent_socket_path(dir.path(), ::getpid());
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t server = ::fork();
  REQUIRE(server >= 0);
  if (server == 0) {  // the socket file is ours (bound as root), the listener another uid's
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    const sockaddr_un addr = unix_address(path);
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) ::_exit(1);
    if (::setresgid(kOtherUid, kOtherUid, kOtherUid) != 0 || ::setresuid(kOtherUid, kOtherUid, kOtherUid) != 0) ::_exit(2);
    if (::listen(fd, 8) != 0) ::_exit(3);
    [[maybe_unused]] ssize_t n = ::write(ready[1], "r", 1);
    for (;;) {
      const int c = ::accept(fd, nullptr, nullptr);
      const char reply[] = "ok command=fake state=dormant recordings=0\n";
      if (c >= 0) [[maybe_unused]] ssize_t w = ::send(c, reply, sizeof reply - 1, MSG_NOSIGNAL);
      if (c >= 0) ::close(c);
    }
  }
  char byte = 0;
  REQUIRE(::read(ready[0], &byte, 1) == 1);
  const Result<Message> reply = agent_request(::getpid(), message("status"), 2000);
  CHECK_FALSE(reply.is_ok());
  CHECK(reply.status().message().find("served by uid " + std::to_string(kOtherUid)) != std::string::npos);
  CHECK(listed_agents().empty());
  ::kill(server, SIGKILL);
  ::waitpid(server, nullptr, 0);
  ::close(ready[0]);
  ::close(ready[1]);
}

TEST_CASE("fault 12: escape sequences and invalid UTF-8 in replies never reach a terminal or the viewer") {
  TempDir dir;
  ScopedEnv socket_dir("STRATA_SOCKET_DIR", dir.path());
  const std::string evil = "\x1b]0;owned\x07\x1b[2J\xc2\x9b" "31m\xff\r\nnext";
  ScriptedAgent agent(dir.path(), ::getpid(), [&](const Message& req) {
    if (req.verb == "start") return error_reply("cannot create " + evil);
    Message m = message("ok");
    m.set("command", evil).set("gpu", evil).set("state", evil).set("output", evil).set("recordings", "0");
    return m;
  });
  const std::vector<AgentInfo> agents = listed_agents();
  REQUIRE(agents.size() == 1);
  CHECK(printable(agents[0].command));
  CHECK(printable(agents[0].gpu));
  CHECK(printable(agents[0].state));
  CHECK(printable(agents[0].output));
  CHECK(agents[0].command.find("owned") != std::string::npos);  // the text is kept, its controls are not
  const Result<Message> reply = agent_request(::getpid(), message("status"), 2000);
  REQUIRE(reply.is_ok());
  for (const auto& [key, value] : reply->fields) CHECK_MESSAGE(printable(value), key);
  RecordOptions opt;
  opt.duration_ms = 100;
  opt.output = dir / "out.json";
  const Result<RecordResult> recorded = record_from_agent(::getpid(), opt, nullptr, {});
  CHECK_FALSE(recorded.is_ok());
  const std::string& error = recorded.status().message();
  CHECK(error.find("cannot create") != std::string::npos);
  CHECK(printable(error));
}

TEST_CASE("fault 12: a job's agent cannot make the client take a file outside the job's directory") {
  TempDir dir;
  ScopedEnv socket_dir("STRATA_SOCKET_DIR", dir.path());
  const std::string out = dir / "job";
  // Each agent answers status with its rank and a count of recordings that grows after the start.
  const auto agent = [&](const char* rank, std::string named) {
    return [rank, named, started = std::make_shared<std::atomic<bool>>(false)](const Message& req) {
      Message m = message("ok");
      if (req.verb == "start") {
        started->store(true);
        return m.set("output", named);
      }
      return m.set("rank", rank).set("recordings", *started ? "1" : "0").set("events", "5").set("dropped", "0");
    };
  };
  ScriptedAgent liar(dir.path(), ::getpid(), agent("0", dir / "elsewhere/rank-0.pt.trace.json"));
  ScriptedAgent sneaky(dir.path(), ::getppid(), agent("99999999999", out + "/../rank-1.pt.trace.json"));
  RecordOptions opt;
  opt.duration_ms = 100;
  opt.output_dir = out;
  const MultiRecording m = record_agents({::getpid(), ::getppid()}, opt, nullptr, {});
  REQUIRE(m.agents.size() == 2);
  for (const AgentRecording& a : m.agents) {
    CHECK(a.done);
    CHECK(a.state == "failed");
    CHECK(a.output.empty());
    CHECK_MESSAGE(a.status.message().find("did not name a trace file in " + out) != std::string::npos, a.status.message());
  }
  CHECK(m.agents[0].rank == 0);
  CHECK(m.agents[1].rank == -1);  // past INT_MAX: no rank
  CHECK_FALSE(m.finished());
}

TEST_CASE("fault 13: replies that lack fields or hold malformed ones are errors, never crashes") {
  TempDir dir;
  ScopedEnv socket_dir("STRATA_SOCKET_DIR", dir.path());
  // Each script answers status, start and stop in its own broken way.
  struct Script {
    const char* what;
    std::function<Message(const Message&, int)> reply;  // (request, how many statuses so far)
    const char* error;                                  // what record_from_agent says
  };
  const Message bare = message("ok");
  const auto counted = [](const char* recordings) {
    Message m = message("ok");
    m.set("recordings", recordings);
    return m;
  };
  const std::vector<Script> scripts = {
      {"status without any field", [&](const Message&, int) { return bare; }, "'recordings'"},
      {"recordings not a number", [&](const Message&, int) { return counted("many"); }, "'recordings'"},
      {"start answered 'ok' without output, the result without events",
       [&](const Message& req, int n) { return req.verb == "start" ? bare : counted(n > 1 ? "1" : "0"); }, "'events'"},
      {"an error without a message", [&](const Message&, int) { return message("error"); }, "malformed reply"},
      {"a reply that is no 'ok' or 'error'", [&](const Message&, int) { return message("maybe"); }, "malformed reply"},
  };
  for (const Script& s : scripts) {
    const std::string what = s.what;
    CAPTURE(what);
    std::atomic<int> statuses{0};
    ScriptedAgent agent(dir.path(), ::getpid(), [&](const Message& req) {
      if (req.verb == "status") ++statuses;
      return s.reply(req, statuses);
    });
    RecordOptions opt;
    opt.duration_ms = 100;
    opt.output = dir / "out.json";
    const Result<RecordResult> recorded = record_from_agent(::getpid(), opt, nullptr, {});
    CHECK_FALSE(recorded.is_ok());
    CHECK_MESSAGE(recorded.status().message().find(s.error) != std::string::npos, recorded.status().message());
    // The viewer's Attach dialog runs the same code on a worker thread: it fails, with the reason.
    statuses = 0;
    AttachSession session;
    REQUIRE(session.start(::getpid(), opt).is_ok());
    for (int i = 0; i < 500 && session.active(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    CHECK(session.state() == AttachSession::State::Failed);
    CHECK_FALSE(session.status().message().empty());
    CHECK(listed_agents().size() <= 1);  // listing takes what there is
    ::unlink(agent_socket_path(dir.path(), ::getpid()).c_str());
  }
}

TEST_CASE("fault 14: an agent that does not answer is named; the ones that do are still listed") {
  TempDir dir;
  ScopedEnv socket_dir("STRATA_SOCKET_DIR", dir.path());
  const pid_t silent_pid = ::getppid();  // alive, so its socket is not taken for a dead job's
  const int silent = silent_listener(agent_socket_path(dir.path(), silent_pid), 8);
  // With only the silent one: not "no running jobs", but which one did not answer.
  const std::vector<std::string> list = {STRATA_CLI, "attach"};
  std::map<std::string, std::string> env = {{"STRATA_SOCKET_DIR", dir.path()}};
  ChildProcess alone;
  REQUIRE(alone.start(list, env));
  REQUIRE(alone.wait(20000));
  CHECK(alone.exit_status() == 1);
  CHECK(alone.out().find("no running jobs") == std::string::npos);
  CHECK(alone.out().find("no agent answered") != std::string::npos);
  CHECK(alone.err().find("pid " + std::to_string(silent_pid) + " did not answer") != std::string::npos);

  ScriptedAgent agent(dir.path(), ::getpid(), [](const Message&) {
    Message m = message("ok");
    m.set("command", "\x1b[31mpython train.py").set("state", "dormant").set("gpu", "H100").set("recordings", "0");
    return m;
  });
  std::vector<AgentInfo> agents;
  const Status listed = list_agents(agents);
  REQUIRE(agents.size() == 1);
  CHECK(agents[0].pid == ::getpid());
  CHECK(listed.message().find("pid " + std::to_string(silent_pid) + " did not answer") != std::string::npos);
  ChildProcess both;
  REQUIRE(both.start(list, env));
  REQUIRE(both.wait(20000));
  CHECK(both.exit_status() == 0);
  CHECK(both.out().find(std::to_string(::getpid())) != std::string::npos);
  CHECK(both.out().find("python train.py") != std::string::npos);
  CHECK(both.out().find('\x1b') == std::string::npos);  // printed without its escape sequence
  CHECK(both.err().find("pid " + std::to_string(silent_pid) + " did not answer") != std::string::npos);
  ::close(silent);
}

TEST_CASE("fault 15: --kineto answers only the target job and the processes it started, as this user") {
  ScopedEnv ipc_dir("KINETO_IPC_SOCKET_DIR", std::nullopt);  // the abstract namespace, as dynolog uses
  const std::string endpoint = "strata-test-dynolog-" + std::to_string(::getpid());
  kineto::Daemon daemon;
  const Status bound = daemon.bind(endpoint);
  REQUIRE_MESSAGE(bound.is_ok(), bound.message());
  TempDir bin(0755);
  const std::string intruder = runnable_copy(STRATA_INTRUDER, bin);
  // The job is started first, so that its pid is known, and asks for its config (as that same
  // process: sh execs) only once `go` exists.
  const std::string go = bin / "go";
  ChildProcess job;
  REQUIRE(job.start({"/bin/sh", "-c", "while [ ! -e \"$2\" ]; do sleep 0.05; done; exec \"$0\" kineto-request \"$1\" 0",
                     intruder, endpoint, go}));
  std::vector<std::string> log;
  Status delivered(strata::StatusCode::Internal, "not delivered yet");
  const std::string config = kineto::trace_config(100, 0, "/tmp/x/trace.pt.trace.json");
  std::thread serving([&] {
    delivered = daemon.deliver(job.pid(), config, 20000, [&](const std::string& l) { log.push_back(l); });
  });
  // While the daemon serves: a process of this user that is not the job nor started by it,
  // and another user's, both claiming to be the job, get no answer at all.
  ChildProcess impostor;
  REQUIRE(impostor.start({intruder, "kineto-request", endpoint, std::to_string(job.pid())}));
  REQUIRE(impostor.wait(10000));
  CHECK(impostor.exit_status() == 2);
  std::string why;
  const auto other_argv = as_other_user({intruder, "kineto-request", endpoint, std::to_string(job.pid())}, &why);
  if (other_argv.empty()) {
    MESSAGE(why);
  } else {
    ChildProcess other;
    REQUIRE(other.start(other_argv));
    REQUIRE(other.wait(10000));
    CHECK(other.exit_status() == 2);
  }
  std::ofstream(go) << "go";
  REQUIRE(job.wait(15000));
  serving.join();
  CHECK_MESSAGE(delivered.is_ok(), delivered.message());
  CHECK(job.exit_status() == 0);  // the job itself got the config
  int ignored = 0;
  for (const std::string& l : log) ignored += l.rfind("ignored a datagram from pid", 0) == 0;
  CHECK(ignored == (other_argv.empty() ? 1 : 2));
}

TEST_CASE("fault 15: Kineto's trace is taken only from a private directory, as a regular file of this user") {
  kineto::TraceDir dir, other;
  const Status created = dir.create();
  REQUIRE_MESSAGE(created.is_ok(), created.message());
  REQUIRE(other.create().is_ok());
  CHECK(dir.path() != other.path());  // not guessable from the pid or the time
  struct stat st {};
  REQUIRE(::stat(dir.path().c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  CHECK(st.st_uid == ::getuid());
  const std::string requested = dir.path() + "/trace.pt.trace.json";
  const auto names = kineto::written_names(requested, 4242);
  REQUIRE(names.size() == 2);
  TempDir elsewhere;
  const std::string secret = elsewhere / "secret";
  std::ofstream(secret) << "{\"not\": \"a trace\"}";

  SUBCASE("a symlink planted where the trace goes") {
    REQUIRE(::symlink(secret.c_str(), names[1].c_str()) == 0);
    const Result<std::string> taken = kineto::wait_for_trace(names, 3000);
    CHECK_FALSE(taken.is_ok());
    CHECK(taken.status().message().find("refusing") != std::string::npos);
  }
  SUBCASE("a FIFO: refused at once, never blocking") {
    REQUIRE(::mkfifo(names[0].c_str(), 0600) == 0);
    const auto t0 = Clock::now();
    const Result<std::string> taken = kineto::wait_for_trace(names, 3000);
    CHECK_FALSE(taken.is_ok());
    CHECK(seconds_since(t0) < 2.5);
    CHECK(taken.status().message().find("not a regular file") != std::string::npos);
  }
  SUBCASE("a file of another user") {
    if (::getuid() != 0) {
      MESSAGE("needs root to make a file of another user; skipped");
      return;
    }
    std::ofstream(names[1]) << "{\"traceEvents\": []}";
    REQUIRE(::chown(names[1].c_str(), kOtherUid, kOtherUid) == 0);
    const Result<std::string> taken = kineto::wait_for_trace(names, 3000);
    CHECK_FALSE(taken.is_ok());
    CHECK(taken.status().message().find("not a regular file of this user") != std::string::npos);
  }
  SUBCASE("the job's own trace is taken, also across file systems") {
    const std::string text = "{\"traceEvents\": []}\n";
    std::ofstream(names[1]) << text;
    REQUIRE(require_ok(kineto::wait_for_trace(names, 5000)) == names[1]);
    const std::string to = elsewhere / "out.pt.trace.json";
    const Status moved = kineto::move_trace(names[1], to);
    REQUIRE_MESSAGE(moved.is_ok(), moved.message());
    std::ifstream in(to);
    CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == text);
    CHECK(::access(names[1].c_str(), F_OK) != 0);
    struct stat shm {}, tmp {};
    if (::stat("/dev/shm", &shm) == 0 && ::stat(elsewhere.path().c_str(), &tmp) == 0 && shm.st_dev != tmp.st_dev) {
      std::ofstream(names[0]) << text;
      const std::string across = "/dev/shm/strata-fault-" + std::to_string(::getpid()) + ".json";
      const Status copied_across = kineto::move_trace(names[0], across);  // rename fails (EXDEV): copied
      REQUIRE_MESSAGE(copied_across.is_ok(), copied_across.message());
      std::ifstream copied(across);
      CHECK(std::string(std::istreambuf_iterator<char>(copied), {}) == text);
      CHECK(::access(names[0].c_str(), F_OK) != 0);
      ::unlink(across.c_str());
    }
  }
}

TEST_CASE("fault 16: a live ipcfabric endpoint is never removed, a stale one is replaced, long names are refused") {
  TempDir dir;
  ScopedEnv ipc_dir("KINETO_IPC_SOCKET_DIR", dir.path());
  const std::string path = dir / "dynolog";
  const sockaddr_un addr = unix_address(path);

  const int live = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);  // a running dynolog
  REQUIRE(::bind(live, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0);
  {
    kineto::Daemon ours;
    const Status bound = ours.bind("dynolog");
    CHECK_FALSE(bound.is_ok());
    CHECK(bound.message().find("held by a running process") != std::string::npos);
  }
  const int sender = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  CHECK(::sendto(sender, "ping", 4, 0, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 4);  // still reachable
  char buf[8];
  CHECK(::recv(live, buf, sizeof buf, MSG_DONTWAIT) == 4);
  ::close(live);  // the daemon died; its socket file stays behind

  {
    kineto::Daemon ours;
    const Status bound = ours.bind("dynolog");
    CHECK_MESSAGE(bound.is_ok(), bound.message());  // stale: replaced
    // Someone replaces our socket while we run: at the end only ours would be removed.
    REQUIRE(::unlink(path.c_str()) == 0);
    const int successor = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    REQUIRE(::bind(successor, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0);
    ::close(successor);
  }
  CHECK(::access(path.c_str(), F_OK) == 0);
  REQUIRE(::unlink(path.c_str()) == 0);

  std::ofstream(path) << "not a socket";
  {
    kineto::Daemon ours;
    const Status bound = ours.bind("dynolog");
    CHECK_FALSE(bound.is_ok());
    CHECK(bound.message().find("not a socket") != std::string::npos);
  }
  CHECK(::access(path.c_str(), F_OK) == 0);

  ScopedEnv long_dir("KINETO_IPC_SOCKET_DIR", dir.path() + "/" + std::string(120, 'd'));
  kineto::Daemon far;
  const Status too_far = far.bind("dynolog");
  CHECK_FALSE(too_far.is_ok());
  CHECK(too_far.message().find("does not fit") != std::string::npos);
  ScopedEnv abstract("KINETO_IPC_SOCKET_DIR", std::nullopt);
  CHECK_FALSE(far.bind(std::string(200, 'n')).is_ok());
  ::close(sender);
}
