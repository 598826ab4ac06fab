// Fault injection, the agent side: the real libstrata_agent.so in a simulated job (the CUPTI
// simulator, sim/) meets hostile or broken requests, slow clients, a job short of file
// descriptors or of file size, a stderr nobody reads. Through all of them the job keeps its
// records, its speed (it ends on time) and its exit (status 0, its counters printed).
// Each test names the fault class of collector/README.md ("Faults the collector survives").
#include <doctest/doctest.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <simdjson.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "client/agents.h"
#include "helpers.h"
#include "json_check.h"
#include "protocol/control_socket.h"
#include "require_ok.h"
#include "sim_job.h"

using namespace strata::collector;
using namespace strata::collector::test;
using strata::Result;
using strata::Status;
using strata::test::require_ok;

namespace {

using Clock = std::chrono::steady_clock;

std::string agent_socket(pid_t pid) { return agent_socket_path(socket_dir(), pid); }

// A connection to the agent that says nothing (yet).
int idle_connection(pid_t pid) {
  const int fd = connect_unix(agent_socket(pid));
  REQUIRE(fd >= 0);
  return fd;
}

// CPU seconds the agent's thread ("strata-agent") has used.
double agent_thread_cpu(pid_t pid) {
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = ::opendir(tasks.c_str());
  REQUIRE(d != nullptr);
  double seconds = -1;
  while (dirent* e = ::readdir(d)) {
    std::ifstream comm(tasks + "/" + e->d_name + "/comm");
    std::string name;
    if (!std::getline(comm, name) || name != "strata-agent") continue;
    std::ifstream stat(tasks + "/" + e->d_name + "/stat");
    std::string text;
    std::getline(stat, text);
    std::istringstream rest(text.substr(text.rfind(')') + 2));
    std::string skip;
    for (int i = 3; i < 14; ++i) rest >> skip;  // fields 3..13
    unsigned long long utime = 0, stime = 0;
    rest >> utime >> stime;
    seconds = static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
  }
  ::closedir(d);
  REQUIRE_MESSAGE(seconds >= 0, "no thread named strata-agent in pid " << pid);
  return seconds;
}

// Event lines of an agent trace that a JSON parser reads whole (a line cut short is not one).
uint64_t whole_events(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string line;
  uint64_t n = 0;
  simdjson::dom::parser parser;
  while (std::getline(in, line)) {
    const size_t at = line.find("{\"ph\"");
    if (at == std::string::npos) continue;
    std::string text = line.substr(at);
    if (!text.empty() && text.back() == ',') text.pop_back();
    simdjson::dom::element e;
    n += parser.parse(text).get(e) == simdjson::SUCCESS;
  }
  return n;
}

// What every test asks of the job at the end: it ran its course, exited 0 and was not slowed
// down past recognition (`seconds` of work; the bound is generous, this is no benchmark).
void check_job_unharmed(SimJob& job, double seconds) {
  REQUIRE_MESSAGE(job.wait(int(seconds * 1000) + 30000), job.error());
  CHECK(job.exit_status() == 0);
  CHECK(job.seconds_run() < seconds + 20);
  CHECK(job.stat("api_calls") > 0);
}

std::string start_line(const std::string& fields) { return "start " + fields + "\n"; }

}  // namespace

TEST_CASE("fault 1: outputs that are not regular files are refused at once; the job runs on and exits") {
  SimJob job;
  REQUIRE_MESSAGE(job.start({"--threads", "2", "--seconds", "5", "--kernels", "4", "--sleep-us", "500"}), job.error());
  const std::string fifo = job.path("fifo"), read_fifo = job.path("read-fifo"), target = job.path("target.json"),
                    link = job.path("link.json");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);  // nobody reads it: opening it to write would block
  REQUIRE(::mkfifo(read_fifo.c_str(), 0600) == 0);
  const int reader = ::open(read_fifo.c_str(), O_RDONLY | O_NONBLOCK);  // read once, then gone: SIGPIPE
  REQUIRE(reader >= 0);
  REQUIRE(::symlink(target.c_str(), link.c_str()) == 0);
  for (const std::string& output : {fifo, read_fifo, link, std::string("/dev/full"), std::string("/dev/null"), job.dir()}) {
    CAPTURE(output);
    RecordOptions opt;
    opt.duration_ms = 500;
    opt.output = output;
    const auto t0 = Clock::now();
    const Message reply = ask(job.pid(), start_request(opt), 3000);
    CHECK(std::chrono::duration<double>(Clock::now() - t0).count() < 3);
    REQUIRE(is_error(reply));
    CHECK(error_text(reply).find("not a regular file") != std::string::npos);
    CHECK(field(ask(job.pid(), message("status")), "state") == "dormant");
  }
  ::close(reader);
  CHECK(::access(target.c_str(), F_OK) != 0);  // nothing was created through the symlink
  check_job_unharmed(job, 5);
  CHECK(job.stat("subscribe_calls") == 1);
}

TEST_CASE("faults 1 and 10: a file that reaches RLIMIT_FSIZE ends the recording with an error; the events "
          "reported are the ones in the file; the job gets no SIGXFSZ") {
  SimJob job;
  REQUIRE_MESSAGE(job.start({"--threads", "2", "--seconds", "5", "--kernels", "8", "--sleep-us", "300",
                             "--file-size-limit", "100000"}),
                  job.error());
  RecordOptions opt;
  opt.duration_ms = 1500;
  opt.output = job.path("limited.pt.trace.json");
  const Result<RecordResult> result = job.record(opt);
  CHECK_FALSE(result.is_ok());
  CHECK_MESSAGE(result.status().message().find("File too large") != std::string::npos, result.status().message());
  const Message status = ask(job.pid(), message("status"));
  CHECK(field(status, "error").find("File too large") != std::string::npos);
  struct stat st {};
  REQUIRE(::stat(opt.output.c_str(), &st) == 0);
  CHECK(st.st_size <= 100000);
  const uint64_t in_file = whole_events(opt.output);
  CHECK(in_file > 0);
  CHECK(field(status, "events") == std::to_string(in_file));  // not what was handed to the file
  check_job_unharmed(job, 5);
}

TEST_CASE("fault 1: the agent's messages to a stderr nobody reads never SIGPIPE the job") {
  SimJob job;
  RecordOptions opt;
  opt.duration_ms = 100;
  opt.output = "relative.json";  // refused at cuInit, on the job's thread: the agent says why on stderr
  REQUIRE_MESSAGE(job.start({"--threads", "1", "--seconds", "4", "--kernels", "4", "--sleep-us", "300",
                             "--broken-stderr", "--file-size-limit", "20000"},
                            {{"STRATA_RECORD", encode_message(start_request(opt))}}),
                  job.error());
  opt.duration_ms = 500;
  opt.output = job.path("small.pt.trace.json");  // fails at the size limit: said from the agent's thread
  const Result<RecordResult> result = job.record(opt);
  CHECK_FALSE(result.is_ok());
  CHECK(result.status().message().find("File too large") != std::string::npos);
  check_job_unharmed(job, 4);
}

TEST_CASE("fault 2: silent and dripping clients hold up neither other clients, nor the recording, nor the exit") {
  SimJob job;
  REQUIRE_MESSAGE(job.start({"--threads", "2", "--seconds", "6", "--kernels", "5", "--sleep-us", "1000"},
                            {{"STRATA_BUFFER_MB", "8"}}),
                  job.error());
  std::vector<int> idle;
  for (int i = 0; i < 40; ++i) idle.push_back(idle_connection(job.pid()));
  std::atomic<bool> stop{false};
  std::thread drip([&] {  // slow clients: one byte of a request every 100 ms
    std::vector<int> slow;
    for (int i = 0; i < 4; ++i) slow.push_back(idle_connection(job.pid()));
    while (!stop.load()) {
      for (int fd : slow) [[maybe_unused]] ssize_t n = ::send(fd, "s", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    for (int fd : slow) ::close(fd);
  });
  const auto t0 = Clock::now();
  std::vector<AgentInfo> agents;
  const Status listed = list_agents(agents);
  CHECK(std::chrono::duration<double>(Clock::now() - t0).count() < 2.5);  // served in between, not after them
  CHECK_MESSAGE(agents.size() == 1, listed.message());
  RecordOptions opt;
  opt.duration_ms = 1500;
  opt.output = job.path("busy.pt.trace.json");
  Result<RecordResult> result = Status(strata::StatusCode::Internal, "the recording did not run");
  std::thread recording([&] { result = job.record(opt); });
  for (int i = 0; i < 10; ++i) {  // meanwhile more silent clients come, and status still answers at once
    idle.push_back(idle_connection(job.pid()));
    CHECK_FALSE(is_error(ask(job.pid(), message("status"), 2000)));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  recording.join();
  REQUIRE_MESSAGE(result.is_ok(), result.status().message());
  CHECK(result->dropped == 0);  // buffers were drained while clients waited
  CHECK(result->events > 0);
  // The job exits with every one of them still connected.
  check_job_unharmed(job, 6);
  stop.store(true);
  drip.join();
  for (int fd : idle) ::close(fd);
  CHECK(job.stat("records_dropped") == 0);
  const test::TraceSummary s = test::summarize(test::read_file(opt.output));
  CHECK_MESSAGE(s.parsed, s.error);
}

TEST_CASE("fault 3: a job out of file descriptors: the agent refuses clients without spinning, then recovers") {
  SimJob job;
  // Long enough that a loaded machine still has the job (and its agent's thread) around after
  // the descriptors are back.
  REQUIRE_MESSAGE(job.start({"--threads", "1", "--seconds", "8", "--kernels", "2", "--sleep-us", "2000",
                             "--hold-fds-ms", "2500"}),
                  job.error());
  REQUIRE(job.wait_for_line("fds held", 10000));
  const double cpu_before = agent_thread_cpu(job.pid());
  const auto t0 = Clock::now();
  int refused = 0;
  for (int i = 0; i < 12; ++i) {
    const Result<Message> reply = agent_request(job.pid(), message("status"), 1000);
    refused += reply.is_ok() && is_error(reply.value()) &&
               error_text(reply.value()).find("out of file descriptors") != std::string::npos;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  const double cpu = agent_thread_cpu(job.pid()) - cpu_before;
  CHECK(refused > 0);
  CHECK_MESSAGE(cpu < 0.3 * wall, "the agent's thread used " << cpu << " s of CPU in " << wall << " s");
  REQUIRE(job.wait_for_line("fds released", 10000));
  CHECK(field(ask(job.pid(), message("status")), "state") == "dormant");
  RecordOptions opt;
  opt.duration_ms = 200;
  opt.output = job.path("after.pt.trace.json");
  const RecordResult result = require_ok(job.record(opt));
  CHECK(result.events > 0);
  check_job_unharmed(job, 8);
}

TEST_CASE("faults 4, 6, 7, 8: refused starts name what is wrong, create no file and leave CUPTI released") {
  SimJob job;
  REQUIRE_MESSAGE(job.start({"--threads", "1", "--seconds", "6", "--kernels", "2", "--sleep-us", "1000"}), job.error());
  RecordOptions opt;
  opt.duration_ms = 100;
  opt.output = job.path("first.pt.trace.json");
  require_ok(job.record(opt));
  REQUIRE(wait_for_status(job.pid(), "cupti", "released") == "released");

  TempDir out;
  const std::string ok_path = out / "x.json";
  const std::string max_u64 = "18446744073709551615", max_i64 = "9223372036854775807";
  struct Case {
    std::string line;
    std::string says;
  };
  const std::vector<Case> cases = {
      {start_line("duraton_ms=500 output=" + ok_path), "unknown key 'duraton_ms'"},              // 6
      {start_line("output=" + ok_path + " source=foo"), "source and pattern go with iterations"},  // 6
      {start_line("output=" + ok_path + " pattern=*step*"), "source and pattern go with iterations"},
      {start_line("output=" + ok_path + " iterations=3 source=foo"), "source must be nvtx or profiler"},
      {start_line("output=" + ok_path + " iterations=3"), "NVTX ranges do not reach the agent"},
      {start_line("output=" + ok_path + " duration_ms=" + max_u64), "duration_ms takes a whole number from 1"},  // 7
      {start_line("output=" + ok_path + " duration_ms=" + max_i64), "duration_ms takes a whole number from 1"},
      {start_line("output=" + ok_path + " duration_ms=0"), "duration_ms takes a whole number from 1"},
      {start_line("output=" + ok_path + " duration_ms=-5"), "duration_ms takes a whole number"},
      {start_line("output=" + ok_path + " delay_ms=" + max_u64), "delay_ms takes a whole number from 0"},
      {start_line("output=" + ok_path + " iterations=0 source=profiler"), "iterations takes a whole number from 1"},
      {start_line("output=" + ok_path + " iterations=1000001 source=profiler"), "iterations takes a whole number"},
      {start_line("output=" + ok_path + " exclusive=yes"), "exclusive takes 0 or 1"},
      {start_line("output=" + ok_path + " kinds=kernel,bogus"), "unknown kind 'bogus'"},
      {start_line("output=" + ok_path + " kinds="), "kinds has no value"},
      {start_line("output=relative.json"), "absolute path"},
      {start_line("duration_ms=100"), "absolute path"},
      {start_line("output=" + ok_path + " output_dir=" + out.path()), "give output or output_dir"},
      {start_line("output_dir=relative/dir"), "output_dir must be an absolute path"},
      {start_line("output=" + ok_path + " gzip=1"), "gzip takes 0 or 1, with output_dir"},
      {start_line("output_dir=" + out.path() + " gzip=yes"), "gzip takes 0 or 1"},
      {start_line("output=" + out.path() + "/no/such/dir/x.json"), "No such file or directory"},
      {start_line("output=/dev/full"), "not a regular file"},  // 1
      {start_line("output=" + out.path() + "/a%00b.json"), "NUL byte in value of output"},  // 8
      {"status verbose=1\n", "unknown key 'verbose'"},
      {"stop now=1\n", "unknown key 'now'"},
      {"launch\n", "unknown command 'launch'"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.line);
    const std::string reply = raw_exchange(agent_socket(job.pid()), c.line);
    const Message m = require_ok(decode_message(reply));
    CHECK(is_error(m));
    CHECK_MESSAGE(error_text(m).find(c.says) != std::string::npos, error_text(m));
  }
  CHECK(raw_exchange(agent_socket(job.pid()), "status\r\n").rfind("ok ", 0) == 0);  // 8: CRLF is a line ending
  const Message status = ask(job.pid(), message("status"));
  CHECK(field(status, "cupti") == "released");  // 4: no refused start brought CUPTI back
  CHECK(field(status, "state") == "dormant");
  CHECK(field(status, "recordings") == "1");
  DIR* d = ::opendir(out.path().c_str());
  int files = 0;
  while (dirent* e = ::readdir(d)) files += e->d_name[0] != '.';
  ::closedir(d);
  CHECK(files == 0);
  check_job_unharmed(job, 6);
  CHECK(job.stat("subscribe_calls") == 1);
  CHECK(job.stat("finalize_calls") == 1);
}

TEST_CASE("fault 5: what an iteration trigger does on the job's thread is the kinds switch, counted; patterns "
          "changed between recordings never change under a callback") {
  SimJob job;
  RecordOptions opt;
  opt.iterations = 3;
  opt.output = job.path("three.pt.trace.json");
  Message m = start_request(opt);
  m.set("exclusive", "1");
  REQUIRE_MESSAGE(job.start({"--range", "iteration", "--threads", "2", "--seconds", "6", "--kernels", "3",
                             "--sleep-us", "500"},
                            {{"STRATA_RECORD", encode_message(m)}, {"NVTX_INJECTION64_PATH", SimJob::agent_path()}}),
                  job.error());
  // While the job's threads push ranges, arm and stop with new patterns again and again: the
  // NVTX callback reads the pattern on those threads.
  REQUIRE(wait_for_status(job.pid(), "recordings", "1") == "1");
  for (int i = 0; i < 20; ++i) {
    RecordOptions armed;
    armed.iterations = 1000;
    armed.pattern = "never-" + std::to_string(i % 5) + "*";
    armed.output = job.path("armed" + std::to_string(i) + ".json");
    const Message started = ask(job.pid(), start_request(armed));
    REQUIRE_MESSAGE(!is_error(started), error_text(started));
    CHECK_FALSE(is_error(ask(job.pid(), message("stop"))));
  }
  check_job_unharmed(job, 6);
  const test::TraceSummary s = test::summarize(test::read_file(opt.output));
  REQUIRE_MESSAGE(s.parsed, s.error);
  CHECK(s.names.at("iteration") == 3);
  // Inside the job's callbacks the agent called CUPTI, over the simulator's API tables, to
  // switch the kinds on (11 calls: RUNTIME, 1 noisy API off, 2 driver APIs on, 7 kinds) and
  // off (10), once for the timestamp of the range that started the recording, and twice per
  // release (cuptiUnsubscribe + cuptiFinalize at a CUDA call's exit; how many of the 21
  // sessions were released before the next one began depends on timing). Nothing else: the
  // armed sessions whose pattern never matched added none. With CUPTI 13.0's tables the
  // switches are 165 and 134 calls (collector/README.md).
  CHECK(job.stat("finalize_in_exit_callback") >= 1);
  CHECK(job.stat("cupti_calls_in_callbacks") == 11 + 10 + 1 + 2 * job.stat("finalize_in_exit_callback"));
}

TEST_CASE("fault 9: the longest status reply still fits one line; a longer output path is refused") {
  SimJob job;
  // The job's command line: long, with spaces, '%', '=' and escape sequences (each escaped to 3 bytes).
  const std::string noise = "a b%c=d\x1b[2J " + std::string(600, ' ');
  REQUIRE_MESSAGE(job.start({"--threads", "1", "--seconds", "5", "--kernels", "2", "--sleep-us", "1000", "--note", noise}),
                  job.error());
  const std::string spaces(200, ' ');
  const std::string deep = job.path(spaces);
  REQUIRE(::mkdir(deep.c_str(), 0700) == 0);
  RecordOptions opt;
  opt.duration_ms = 200;
  opt.output = deep + "/" + std::string(80, ' ') + ".json";  // about 850 bytes %-escaped
  require_ok(job.record(opt));
  const Message status = ask(job.pid(), message("status"));
  CHECK(encode_message(status).size() <= kMaxMessageBytes);
  CHECK(field(status, "command").find("strata_sim_job") != std::string::npos);
  CHECK(listed_agents().size() == 1);
  opt.output = deep + "/" + std::string(200, ' ') + ".json";
  const Message refused = ask(job.pid(), start_request(opt));
  REQUIRE(is_error(refused));
  CHECK(error_text(refused).find("output path too long") != std::string::npos);
  CHECK(listed_agents().size() == 1);  // still usable from the client
  check_job_unharmed(job, 5);
}

TEST_CASE("fault 12: the agent will not serve from a socket directory another user could write to") {
  TempDir base(0755);
  const std::string dir = base / "sockets";
  REQUIRE(::mkdir(dir.c_str(), 0777) == 0);
  REQUIRE(::chmod(dir.c_str(), 0777) == 0);
  SimJob job;
  REQUIRE_MESSAGE(job.start({"--threads", "1", "--iterations", "20", "--kernels", "2"}, {{"STRATA_SOCKET_DIR", dir}}),
                  job.error());
  check_job_unharmed(job, 2);
  CHECK(job.err().find("attach is unavailable: refusing to use " + dir) != std::string::npos);
  DIR* d = ::opendir(dir.c_str());
  int entries = 0;
  while (dirent* e = ::readdir(d)) entries += e->d_name[0] != '.';
  ::closedir(d);
  CHECK(entries == 0);
}
