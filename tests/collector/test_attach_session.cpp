// The Attach dialog's logic without a window or a GPU: LiveFollow's timing, and
// AttachSession against strata_fake_agent (a process speaking the control protocol and
// writing its trace through the agent's streaming writer), with the growing file read by
// the real loader the way the viewer's live view reads it.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "client/attach_session.h"
#include "core/loader.h"

using namespace strata;
using namespace strata::collector;
using namespace std::chrono_literals;
using Action = AttachSession::Action;
using State = AttachSession::State;

namespace {

std::string temp_dir() {
  char tmpl[] = "/tmp/strata-attach-XXXXXX";
  const char* d = ::mkdtemp(tmpl);
  REQUIRE(d != nullptr);
  return d;
}

// A fake agent in its own process, its sockets under a private directory of the test's.
struct FakeAgent {
  pid_t pid = 0;
  std::string dir;

  explicit FakeAgent(const std::vector<std::string>& args = {}) {
    dir = temp_dir();
    ::setenv("STRATA_SOCKET_DIR", (dir + "/sockets").c_str(), 1);
    int out[2];
    REQUIRE(::pipe(out) == 0);
    pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::dup2(out[1], STDOUT_FILENO);
      ::close(out[0]);
      std::vector<char*> argv{const_cast<char*>(STRATA_FAKE_AGENT), const_cast<char*>("--lifetime"),
                              const_cast<char*>("30")};
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(STRATA_FAKE_AGENT, argv.data());
      ::_exit(127);
    }
    ::close(out[1]);
    char line[64] = {};
    const ssize_t n = ::read(out[0], line, sizeof line - 1);  // "listening PID"
    ::close(out[0]);
    REQUIRE_MESSAGE(n > 0, "the fake agent did not start");
    CHECK(std::string(line).rfind("listening " + std::to_string(pid), 0) == 0);
  }
  ~FakeAgent() {
    ::kill(pid, SIGTERM);
    ::waitpid(pid, nullptr, 0);
    std::filesystem::remove_all(dir);
  }
  std::string path(const char* name) const { return dir + "/" + name; }
};

struct Read {
  size_t events = 0;
  bool truncated = false;  // the loader kept the events before a cut-off end
};

// `live`: a read of the growing file may come too early (only the header written yet); the
// viewer then keeps what it shows, and so does this.
std::optional<Read> read_trace(const std::string& path, bool live = false) {
  LoadResult r = load_trace(path);
  if (live && !r.model) return std::nullopt;
  REQUIRE_MESSAGE(r.model, r.error());
  Read out;
  out.events = r.model->ev.size();
  for (const std::string& w : r.model->warnings) out.truncated = out.truncated || w.find("truncated") != std::string::npos;
  return out;
}

// Drives a session as the viewer does, loading synchronously; returns the live reads' sizes
// and the final read.
struct Followed {
  std::vector<Read> live;
  std::vector<Read> final_reads;
};

Followed follow(AttachSession& s, std::chrono::seconds limit = 20s) {
  Followed f;
  const auto end = SteadyClock::now() + limit;
  while (!s.done() && SteadyClock::now() < end) {
    const Action a = s.next(SteadyClock::now(), false);
    if (a == Action::Reload) {
      if (const auto r = read_trace(s.output(), true)) {
        f.live.push_back(*r);
        s.shown(r->events);
      }
    } else if (a == Action::FinalLoad) {
      f.final_reads.push_back(*read_trace(s.output()));
    }
    std::this_thread::sleep_for(20ms);
  }
  REQUIRE_MESSAGE(s.done(), "the session did not finish");
  CHECK(s.next(SteadyClock::now(), false) == Action::None);  // nothing more to read, ever
  return f;
}

bool has_line(const AttachSession& s, const std::string& part) {
  const auto lines = s.lines();
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(part) != std::string::npos; });
}

}  // namespace

TEST_CASE("live follow: at most once an interval, only when the file grew, never while a read runs") {
  LiveFollow f(1s);
  const auto t0 = SteadyClock::now();
  int64_t size = -1;
  int asked = 0;
  auto size_of = [&] { return ++asked, size; };
  CHECK_FALSE(f.due(t0, false, size_of));  // no file yet
  size = 0;
  CHECK_FALSE(f.due(t0 + 1s, false, size_of));  // empty
  size = 100;
  CHECK_FALSE(f.due(t0 + 1500ms, false, size_of));  // within the interval: not even asked
  CHECK(asked == 2);
  CHECK(f.due(t0 + 2s, false, size_of));
  size = 200;
  CHECK_FALSE(f.due(t0 + 3s, true, size_of));  // a read is in flight
  CHECK(asked == 3);
  CHECK(f.due(t0 + 3s, false, size_of));
  CHECK_FALSE(f.due(t0 + 5s, false, size_of));  // unchanged since the last read
  size = 300;
  CHECK(f.due(t0 + 6s, false, size_of));
}

TEST_CASE("attach session: no agent in that pid is an error, with nothing to read") {
  const std::string dir = temp_dir();
  ::setenv("STRATA_SOCKET_DIR", dir.c_str(), 1);
  AttachSession s;
  RecordOptions opt;
  opt.duration_ms = 1000;
  opt.output = dir + "/never.json";
  REQUIRE(s.start(::getpid(), opt).is_ok());
  const Followed f = follow(s, 5s);
  CHECK(s.state() == State::Failed);
  CHECK(s.status().message().find("no Strata agent in pid") != std::string::npos);
  CHECK(f.live.empty());
  CHECK(f.final_reads.empty());
  std::filesystem::remove_all(dir);
}

TEST_CASE("attach session: list a fake agent, record 2 s, read the growing file live, then the whole file") {
  FakeAgent agent;
  AgentScan scan;
  scan.refresh();
  std::vector<AgentInfo> agents;
  Status listed;
  for (int i = 0; i < 250 && !scan.take(agents, listed); ++i) std::this_thread::sleep_for(20ms);
  CHECK_MESSAGE(listed.is_ok(), listed.message());
  const auto it = std::find_if(agents.begin(), agents.end(), [&](const AgentInfo& a) { return a.pid == agent.pid; });
  REQUIRE(it != agents.end());
  CHECK(it->state == "dormant");
  CHECK(it->command == "python train.py --fake");
  CHECK(it->gpu.find("Fake GPU") != std::string::npos);

  AttachSession s;
  RecordOptions opt;
  opt.duration_ms = 2000;
  opt.output = agent.path("live.pt.trace.json");
  REQUIRE(s.start(agent.pid, opt).is_ok());
  CHECK(s.active());
  const Status second = s.start(agent.pid, opt);  // one recording at a time
  CHECK_FALSE(second.is_ok());
  CHECK(second.message().find("in progress") != std::string::npos);
  const Followed f = follow(s);

  CHECK(s.state() == State::Finished);
  CHECK_MESSAGE(s.status().is_ok(), s.status().message());
  CHECK(has_line(s, "recording pid " + std::to_string(agent.pid)));
  CHECK(has_line(s, "finished: "));
  // Read while it grew (about once a second for 2 s): each read saw more. The first was cut
  // off mid-array; a late one may find the file closed before the client has heard so.
  REQUIRE(f.live.size() >= 1);
  CHECK(f.live.front().truncated);
  for (size_t i = 0; i < f.live.size(); ++i) {
    CHECK(f.live[i].events > 0);
    if (i > 0) CHECK(f.live[i].events > f.live[i - 1].events);
  }
  // Then read once more, complete.
  REQUIRE(f.final_reads.size() == 1);
  CHECK_FALSE(f.final_reads[0].truncated);
  CHECK(f.final_reads[0].events >= f.live.back().events);
  CHECK(f.final_reads[0].events > f.live.front().events);
  CHECK(s.result().events > 0);
  CHECK(s.result().output == opt.output);
  CHECK(s.seconds() >= 1.9);
}

TEST_CASE("attach session: Stop ends the recording early, and a second client is told it is busy") {
  FakeAgent agent;
  AttachSession s, other;
  RecordOptions opt;  // neither duration nor iterations: until stopped
  opt.output = agent.path("stopped.json");
  REQUIRE(s.start(agent.pid, opt).is_ok());
  std::this_thread::sleep_for(700ms);
  RecordOptions opt2 = opt;
  opt2.output = agent.path("other.json");
  REQUIRE(other.start(agent.pid, opt2).is_ok());
  follow(other, 5s);
  CHECK(other.state() == State::Failed);
  CHECK(other.status().message().find("already recording") != std::string::npos);

  s.stop();
  CHECK(s.state() == State::Stopping);
  const Followed f = follow(s, 10s);
  CHECK(s.state() == State::Finished);
  CHECK(has_line(s, "stopped early"));
  REQUIRE(f.final_reads.size() == 1);
  CHECK_FALSE(f.final_reads[0].truncated);
  CHECK(f.final_reads[0].events > 100);  // 6 iterations of about 70 events
  CHECK(s.seconds() < 5.0);
}

TEST_CASE("attach session: a job that dies mid-recording fails, and what was shown is read once more") {
  FakeAgent agent({"--die-after-ms", "1600"});
  AttachSession s;
  RecordOptions opt;
  opt.duration_ms = 5000;
  opt.output = agent.path("crashed.json");
  REQUIRE(s.start(agent.pid, opt).is_ok());
  const Followed f = follow(s);
  CHECK(s.state() == State::Failed);
  CHECK(s.status().message().find("the job ended or stopped answering") != std::string::npos);
  REQUIRE(f.live.size() >= 1);
  REQUIRE(f.final_reads.size() == 1);
  CHECK(f.final_reads[0].truncated);  // the agent never closed it
  CHECK(f.final_reads[0].events >= f.live.back().events);
}

TEST_CASE("attach session: iterations are passed on and counted by the agent") {
  FakeAgent agent;
  AttachSession s;
  RecordOptions opt;
  opt.iterations = 3;
  opt.output = agent.path("three.json");
  REQUIRE(s.start(agent.pid, opt).is_ok());
  const Followed f = follow(s);
  CHECK(s.state() == State::Finished);
  REQUIRE(f.final_reads.size() == 1);
  LoadResult r = load_trace(opt.output);
  REQUIRE(r.model);
  int iterations = 0;
  for (EventId e = 0; e < r.model->ev.size(); ++e) iterations += r.model->name_of(e) == "iteration";
  CHECK(iterations == 3);
}

TEST_CASE("a recording's result in words: events, drops, and why an empty one is empty") {
  CHECK(describe(RecordResult{"t.json", 1200, 0}) == "1200 events");
  CHECK(describe(RecordResult{"t.json", 1200, 30}) == "1200 events, 30 records dropped (buffers full)");
  CHECK(describe(RecordResult{"t.json", 0, 0}).find("no CUDA calls") != std::string::npos);
}
