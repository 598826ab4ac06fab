// The control protocol: message encoding, and a server and clients in separate processes.
#include <doctest/doctest.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "helpers.h"
#include "protocol/control_socket.h"
#include "protocol/job_rank.h"
#include "protocol/kinds.h"
#include "protocol/metrics.h"
#include "client/options.h"
#include "protocol/message.h"
#include "require_ok.h"

using namespace strata::collector;
using strata::Result;
using strata::Status;
using strata::test::require_ok;
using strata::collector::test::connect_unix;
using strata::collector::test::message;
using strata::collector::test::raw_exchange;

namespace {

std::string temp_dir() {
  char tmpl[] = "/tmp/strata-protocol-XXXXXX";
  const char* d = ::mkdtemp(tmpl);
  REQUIRE(d != nullptr);
  return d;
}

// Child process: serves requests like the agent does until "quit" or 10 s pass.
// Replies "ok echo=<verb> n=<fields>" to well-formed requests.
[[noreturn]] void serve(const std::string& path, uid_t allowed, int ready_fd) {
  ControlServer server;
  const bool ok = server.listen(path, allowed).is_ok();
  const char byte = ok ? 1 : 0;
  [[maybe_unused]] ssize_t n = ::write(ready_fd, &byte, 1);
  if (!ok) ::_exit(1);
  bool quit = false;
  const auto handle = [&](const Message& req) {
    Message reply;
    reply.verb = "ok";
    reply.set("echo", req.verb).set("n", std::to_string(req.fields.size()));
    if (const std::string* v = req.get("path")) reply.set("path", *v);
    quit = req.verb == "quit";
    return reply;
  };
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!quit && std::chrono::steady_clock::now() < until) server.serve(-1, 100, handle);
  server.close();
  ::_exit(0);
}

pid_t start_server(const std::string& path, uid_t allowed) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) serve(path, allowed, fds[1]);
  char byte = 0;
  REQUIRE(::read(fds[0], &byte, 1) == 1);
  ::close(fds[0]);
  ::close(fds[1]);
  REQUIRE(byte == 1);
  return pid;
}

int reap(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST_CASE("messages round-trip, with escaping") {
  Message m = message("start");
  m.set("output", "/tmp/a b=c%d\n.json").set("duration_ms", "2000");
  const std::string line = encode_message(m);
  CHECK(line == "start output=/tmp/a%20b%3Dc%25d%0A.json duration_ms=2000\n");
  const Message back = require_ok(decode_message(line));
  CHECK(back.verb == "start");
  CHECK(*back.get("output") == "/tmp/a b=c%d\n.json");
  bool bad = false;
  CHECK(get_uint(back, "duration_ms", &bad) == 2000u);
  CHECK_FALSE(get_uint(back, "missing", &bad).has_value());
  CHECK_FALSE(bad);
}

TEST_CASE("recorded kinds: lists, edits of the default, and errors") {
  const auto kinds = [](std::string_view text) -> std::optional<uint32_t> {
    const Result<uint32_t> r = parse_kinds(text);
    if (!r.is_ok()) return std::nullopt;
    return r.value();
  };
  CHECK(kinds("kernel,runtime") == (kKindKernel | kKindRuntime));
  CHECK(kinds(" kernel , runtime-all ,") == (kKindKernel | kKindRuntimeAll));
  CHECK(kinds("default") == kDefaultKinds);
  CHECK(kinds("all") == kAllKinds);
  CHECK(kinds("-sync,-nvtx") == (kDefaultKinds & ~(kKindSync | kKindNvtx)));
  CHECK(kinds("-runtime-all,+runtime") == ((kDefaultKinds & ~kKindRuntimeAll) | kKindRuntime));
  const Result<uint32_t> bogus = parse_kinds("kernel,bogus");
  CHECK_FALSE(bogus.is_ok());
  CHECK(bogus.status().message().find("bogus") != std::string::npos);
  CHECK_FALSE(parse_kinds("").is_ok());
  CHECK_FALSE(parse_kinds("-kernel,-memcpy,-memset,-runtime-all,-driver,-sync,-nvtx,-overhead,-external").is_ok());
  CHECK(kinds_text(kKindKernel | kKindNvtx) == "kernel,nvtx");
  CHECK(kinds(kinds_text(kDefaultKinds)) == kDefaultKinds);  // round trip
  // A start request carries them as one value: commas need no escaping.
  Message m;
  m.verb = "start";
  m.set("kinds", kinds_text(kDefaultKinds));
  const Message back = require_ok(decode_message(encode_message(m)));
  CHECK(*back.get("kinds") == kinds_text(kDefaultKinds));
}

TEST_CASE("metrics and kernel globs: lists, bounds and errors, in the protocol and on the command line") {
  const std::vector<std::string> two =
      require_ok(parse_metrics("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,gpu__time_duration.sum"));
  CHECK(two == std::vector<std::string>{"smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", "gpu__time_duration.sum"});
  CHECK(metrics_text(two) == "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,gpu__time_duration.sum");
  // Why parsing failed; "" (and a failed check) when it did not.
  const auto metrics_error = [](std::string_view text) {
    const Result<std::vector<std::string>> r = parse_metrics(text);
    CHECK_FALSE(r.is_ok());
    return r.status().message();
  };
  CHECK(metrics_error("").find("empty metric name") != std::string::npos);
  CHECK_FALSE(parse_metrics("a.sum,,b.sum").is_ok());
  CHECK(metrics_error("a.sum,a.sum").find("twice") != std::string::npos);
  CHECK_FALSE(parse_metrics("a sum").is_ok());
  std::string many;
  for (size_t i = 0; i <= kMaxMetrics; ++i) many += (i ? ",m" : "m") + std::to_string(i) + ".sum";
  CHECK(metrics_error(many).find("more than " + std::to_string(kMaxMetrics)) != std::string::npos);
  CHECK(check_kernel_glob("*gemm*").is_ok());
  CHECK(check_kernel_glob("[]a]*").is_ok());
  CHECK(check_kernel_glob("\\[x").is_ok());
  CHECK_FALSE(check_kernel_glob("").is_ok());
  const Status unclosed = check_kernel_glob("*[gemm");
  CHECK_FALSE(unclosed.is_ok());
  CHECK(unclosed.message().find("never closed") != std::string::npos);
  CHECK_FALSE(check_kernel_glob("gemm\\").is_ok());
  CHECK_FALSE(check_kernel_glob(std::string(kMaxKernelGlobBytes + 1, 'a')).is_ok());

  // strata record / attach: the options, and --kernels only with --metrics.
  const auto parse = [](std::vector<std::string> args, RecordOptions& opt) {
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    for (int i = 0; i < static_cast<int>(argv.size()); ++i) {
      const Result<bool> parsed = parse_record_option(static_cast<int>(argv.size()), argv.data(), i, opt);
      if (!parsed.is_ok()) return parsed.status().message();
    }
    return check_record_options(opt).message();
  };
  RecordOptions opt;
  CHECK(parse({"--kernels", "*gemm*", "--metrics", "gpu__time_duration.sum"}, opt).empty());
  const Message start = start_request(opt);
  REQUIRE(start.get("metrics") != nullptr);
  CHECK(*start.get("metrics") == "gpu__time_duration.sum");
  CHECK(*start.get("kernels") == "*gemm*");
  RecordOptions lone;
  CHECK(parse({"--kernels", "*gemm*"}, lone).find("give --metrics") != std::string::npos);
  RecordOptions bad;
  CHECK(parse({"--metrics", "a.sum", "--kernels", "[x"}, bad).find("--kernels:") == 0);
  CHECK(parse({"--metrics", ""}, bad).find("--metrics:") == 0);
}

TEST_CASE("a process's rank comes from its launcher's variables; its file in the job's directory from the rank") {
  const auto from = [](std::map<std::string, std::string> env) {
    return job_rank([&](const char* name) -> const char* {
      const auto it = env.find(name);
      return it == env.end() ? nullptr : it->second.c_str();
    });
  };
  const auto is = [](JobRank r, int64_t rank, int64_t world_size) { return r.rank == rank && r.world_size == world_size; };
  CHECK(is(from({}), -1, -1));
  CHECK(is(from({{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}}), 3, 8));  // torchrun
  CHECK(is(from({{"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_SIZE", "6"}}), 5, 6));
  CHECK(is(from({{"PMI_RANK", "2"}, {"PMI_SIZE", "4"}, {"SLURM_PROCID", "9"}}), 2, 4));
  CHECK(is(from({{"SLURM_PROCID", "9"}, {"SLURM_NTASKS", "16"}}), 9, 16));
  CHECK(is(from({{"LOCAL_RANK", "1"}}), 1, -1));
  // A rank that is no whole number is passed over; a world size not above the rank is unknown.
  CHECK(is(from({{"RANK", "x3"}, {"SLURM_PROCID", "4"}, {"SLURM_NTASKS", "8"}}), 4, 8));
  CHECK(is(from({{"RANK", ""}, {"PMI_RANK", "-1"}, {"LOCAL_RANK", "99999999999"}}), -1, -1));
  CHECK(is(from({{"RANK", "4"}, {"WORLD_SIZE", "4"}}), 4, -1));

  CHECK(rank_file_name(3, 1234, false) == "rank-3.pt.trace.json");
  CHECK(rank_file_name(-1, 1234, true) == "pid-1234.pt.trace.json.gz");
  CHECK(rank_file_path("/tmp/run//", 0, 1, false) == "/tmp/run/rank-0.pt.trace.json");
  CHECK(rank_file_path("/", 0, 1, false) == "/rank-0.pt.trace.json");
  for (const char* name : {"rank-0.pt.trace.json", "rank-12.pt.trace.json.gz", "rank-3.4567.pt.trace.json",
                           "pid-99.pt.trace.json"})
    CHECK_MESSAGE(is_rank_file_name(name), name);
  for (const char* name : {"rank-.pt.trace.json", "rank-1.json", "rank-1.pt.trace.json.bak", "notes.txt",
                           "myrank-1.pt.trace.json", "rank-1..pt.trace.json", "rank-1/x.pt.trace.json", ""})
    CHECK_FALSE_MESSAGE(is_rank_file_name(name), name);
  CHECK(is_rank_file_in("/tmp/run/rank-1.pt.trace.json", "/tmp/run/"));
  CHECK_FALSE(is_rank_file_in("/tmp/run/sub/rank-1.pt.trace.json", "/tmp/run"));
  CHECK_FALSE(is_rank_file_in("/tmp/other/rank-1.pt.trace.json", "/tmp/run"));
  CHECK_FALSE(is_rank_file_in("/tmp/run/../x/rank-1.pt.trace.json", "/tmp/run"));
}

TEST_CASE("malformed messages are rejected with a reason") {
  CHECK_FALSE(decode_message("").is_ok());
  CHECK_FALSE(decode_message("Start").is_ok());            // bad command word
  CHECK_FALSE(decode_message("start output").is_ok());     // no '='
  CHECK_FALSE(decode_message("start a=1  b=2").is_ok());   // empty word
  CHECK_FALSE(decode_message("start a=%zz").is_ok());      // bad escape
  CHECK_FALSE(decode_message("start a=%4").is_ok());       // truncated escape
  CHECK_FALSE(decode_message("start a=1 a=2").is_ok());    // duplicate key
  CHECK_FALSE(decode_message("a\nb").is_ok());             // two lines
  const Result<Message> too_long = decode_message(std::string(kMaxMessageBytes + 10, 'a'));
  CHECK_FALSE(too_long.is_ok());
  CHECK(!too_long.status().message().empty());
  Message m = message("start");
  m.set("n", "12x");
  bool bad = false;
  CHECK_FALSE(get_uint(m, "n", &bad).has_value());
  CHECK(bad);
}

TEST_CASE("the socket directory must be private") {
  const std::string dir = temp_dir();
  CHECK(ensure_private_dir(dir + "/agents").is_ok());
  struct stat st {};
  REQUIRE(::stat((dir + "/agents").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  REQUIRE(::chmod((dir + "/agents").c_str(), 0755) == 0);
  const Status shared = ensure_private_dir(dir + "/agents");
  CHECK_FALSE(shared.is_ok());
  CHECK(shared.message().find("mode 0700") != std::string::npos);
  ::rmdir((dir + "/agents").c_str());
  ::rmdir(dir.c_str());
}

TEST_CASE("a client and an agent-side server talk across processes") {
  const std::string dir = temp_dir();
  const std::string path = agent_socket_path(dir, 4242);
  const pid_t server = start_server(path, ::getuid());

  Message req = message("status");
  req.set("path", "/x y");
  const Message reply = require_ok(request(path, req, 3000));
  CHECK(reply.verb == "ok");
  CHECK(*reply.get("echo") == "status");
  CHECK(*reply.get("path") == "/x y");

  // Bad bytes get an error reply, and the server keeps serving.
  CHECK(raw_exchange(path, "NOT A COMMAND\n", false).rfind("error message=bad%20request", 0) == 0);
  CHECK(raw_exchange(path, "start output\n", false).rfind("error ", 0) == 0);
  CHECK(raw_exchange(path, "status", true).rfind("error ", 0) == 0);  // no newline, then EOF
  CHECK(raw_exchange(path, std::string(kMaxMessageBytes + 100, 'x'), false).rfind("error ", 0) == 0);
  // A client that connects and says nothing does not block the server for long.
  const int silent = connect_unix(path);
  REQUIRE(silent >= 0);
  const Result<Message> after = request(path, message("status"), 3000);
  CHECK_MESSAGE(after.is_ok(), after.status().message());
  ::close(silent);

  const Result<Message> quit = request(path, message("quit"), 3000);
  REQUIRE(quit.is_ok());
  CHECK(reap(server) == 0);
  CHECK(::access(path.c_str(), F_OK) != 0);  // the server removed its socket

  // Nobody listening: a clear error, no hang.
  const Result<Message> nobody = request(path, message("status"), 1000);
  CHECK_FALSE(nobody.is_ok());
  CHECK(nobody.status().message().find("cannot connect") != std::string::npos);
  ::rmdir(dir.c_str());
}

TEST_CASE("peers of another uid are refused (SO_PEERCRED)") {
  const std::string dir = temp_dir();
  const std::string path = agent_socket_path(dir, 4243);
  // The server admits only a uid that is not ours, so our own request must be refused.
  const pid_t server = start_server(path, ::getuid() + 1);
  const Message reply = require_ok(request(path, message("status"), 3000));
  CHECK(is_error(reply));
  CHECK(error_text(reply).find("permission denied") != std::string::npos);
  ::kill(server, SIGKILL);  // SIGKILL: the forked child carries doctest's signal handlers
  reap(server);
  ::unlink(path.c_str());
  ::rmdir(dir.c_str());
}

TEST_CASE("another user cannot even reach a socket in the private directory") {
  if (::getuid() != 0) {
    MESSAGE("needs root to switch to another uid; skipped");
    return;
  }
  const std::string dir = temp_dir();
  REQUIRE(ensure_private_dir(dir + "/agents").is_ok());
  const std::string path = agent_socket_path(dir + "/agents", 4244);
  const pid_t server = start_server(path, ::getuid());
  const pid_t intruder = ::fork();
  REQUIRE(intruder >= 0);
  if (intruder == 0) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(3);
    const Result<Message> r = request(path, message("status"), 1000);
    ::_exit(r.is_ok() ? 1 : 0);  // 0: refused, as it must be
  }
  CHECK(reap(intruder) == 0);
  CHECK(request(path, message("quit"), 3000).is_ok());
  reap(server);
  ::rmdir((dir + "/agents").c_str());
  ::rmdir(dir.c_str());
}
