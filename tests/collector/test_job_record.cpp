// Recording a distributed job without a GPU: a launcher (a shell, standing in for torchrun or
// mpirun) starts strata_sim_job ranks with RANK / WORLD_SIZE (or Open MPI's variables) set, each
// loading the real agent over the CUPTI simulator. `strata record -o DIR/` and `strata attach
// --job` must leave one file per rank, named and labelled by rank, that `strata summary DIR
// --json` opens as one job; the ranks' recordings must run at the same time, and by iterations
// cover the same iterations of ranks in lockstep.
#include <doctest/doctest.h>

#include <simdjson.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "child_process.h"
#include "client/attach_session.h"
#include "client/jobs.h"
#include "helpers.h"
#include "json_check.h"
#include "require_ok.h"

using namespace strata::collector;
using namespace strata::collector::test;
using strata::Status;
using strata::test::require_ok;

namespace {

// The variables a launcher sets; the test's own environment must not lend a rank to a process.
bool is_rank_or_agent_variable(const std::string& name) {
  for (const char* v : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
                        "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS",
                        "STRATA_RECORD", "CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH"})
    if (name == v) return true;
  return false;
}

// `sh -c` running one simulated process per entry of `rank_env` ("RANK=0 WORLD_SIZE=2", or ""
// for a process without a rank) in the background, then waiting for them all.
std::vector<std::string> launcher(const std::vector<std::string>& rank_env, const std::string& sim_args) {
  std::string script;
  for (const std::string& env : rank_env) script += env + " " + STRATA_SIM_JOB + " " + sim_args + " & ";
  return {"/bin/sh", "-c", script + "wait"};
}

// `strata record OPTIONS -- LAUNCHER` run to its end, which must be a success.
void record_launcher(ChildProcess& record, const std::vector<std::string>& options, const std::vector<std::string>& sh) {
  std::vector<std::string> argv = {STRATA_CLI, "record"};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.push_back("--");
  argv.insert(argv.end(), sh.begin(), sh.end());
  REQUIRE(record.start(argv, {}, is_rank_or_agent_variable));
  REQUIRE(record.wait(30000));
  CHECK_MESSAGE(record.exit_status() == 0, record.err());
}

// What one rank's file says about itself and when its events ran (ns, the simulator's clock,
// which is the machine's monotonic clock in every process).
struct RankFile {
  TraceSummary summary;
  int64_t rank = -1;
  int64_t world_size = -1;
  double first_ns = 0;
  double last_ns = 0;
  std::vector<std::string> iterations;  // names of the NVTX ranges "iteration" and "iteration SLOT"
};

RankFile read_rank_file(const std::string& path) {
  RankFile f;
  const std::string json = read_file(path);
  f.summary = summarize(json);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(json).get(doc) != simdjson::SUCCESS) return f;
  if (doc["distributedInfo"]["rank"].get(f.rank) != simdjson::SUCCESS) f.rank = -1;  // none written
  if (doc["distributedInfo"]["world_size"].get(f.world_size) != simdjson::SUCCESS) f.world_size = -1;
  int64_t base = 0;
  CHECK(doc["baseTimeNanoseconds"].get(base) == simdjson::SUCCESS);
  f.first_ns = static_cast<double>(base) + f.summary.min_ts * 1000.0;
  f.last_ns = static_cast<double>(base) + f.summary.max_end * 1000.0;
  for (const auto& [name, count] : f.summary.names)
    if (name == "iteration" || name.starts_with("iteration "))
      for (int i = 0; i < count; ++i) f.iterations.push_back(name);
  return f;
}

// `strata summary DIR --json`: the ranks the job was opened with (rank, file name), its notes.
struct JobSummary {
  int64_t world_size = -1;
  std::vector<std::pair<int64_t, std::string>> ranks;
  std::string notes;
};

JobSummary summarize_job(const std::string& dir) {
  std::string out, err;
  const int status = ChildProcess::run({STRATA_APP, "summary", dir, "--json"}, &out, &err, 60000);
  INFO("strata summary: " << err);
  REQUIRE(status == 0);
  JobSummary j;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  REQUIRE(parser.parse(out).get(doc) == simdjson::SUCCESS);
  CHECK(doc["world_size"].get(j.world_size) == simdjson::SUCCESS);
  simdjson::dom::array ranks, notes;
  REQUIRE(doc["ranks"].get(ranks) == simdjson::SUCCESS);
  for (simdjson::dom::element r : ranks) {
    int64_t rank = -1;
    std::string_view file;
    CHECK(r["rank"].get(rank) == simdjson::SUCCESS);
    CHECK(r["file"].get(file) == simdjson::SUCCESS);
    j.ranks.emplace_back(rank, std::filesystem::path(file).filename().string());
  }
  if (doc["notes"].get(notes) == simdjson::SUCCESS)
    for (simdjson::dom::element n : notes) j.notes += std::string(n.get_string().value_unsafe()) + "\n";
  return j;
}

// Waits for `n` simulated processes of `launcher` to have loaded the agent ("ready PID" each).
std::vector<pid_t> wait_ready(const ChildProcess& launcher, size_t n, int timeout_ms = 20000) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    std::vector<pid_t> pids;
    const std::string out = launcher.out();
    for (size_t at = out.find("ready "); at != std::string::npos; at = out.find("ready ", at + 1))
      pids.push_back(static_cast<pid_t>(std::stol(out.substr(at + 6))));
    if (pids.size() >= n || std::chrono::steady_clock::now() > until) return pids;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// A test's private socket directory and agent: the CLI and the jobs it starts find each other.
struct JobTest {
  TempDir dir;
  ScopedEnv sockets{"STRATA_SOCKET_DIR", dir / "sockets"};
  ScopedEnv agent{"STRATA_AGENT", std::string(STRATA_AGENT_PATH)};
  std::map<std::string, std::string> injected() const {
    return {{"CUDA_INJECTION64_PATH", STRATA_AGENT_PATH}, {"NVTX_INJECTION64_PATH", STRATA_AGENT_PATH}};
  }
};

}  // namespace

TEST_CASE("strata record -o DIR/ -- LAUNCHER: one file per rank, named and labelled by RANK, opened as one job") {
  JobTest t;
  const std::string out = t.dir / "run";
  std::filesystem::create_directories(out);
  std::ofstream(out + "/rank-7.pt.trace.json") << "{}";  // an earlier, larger job's
  std::ofstream(out + "/notes.txt") << "mine";
  const auto sh = launcher({"RANK=0 WORLD_SIZE=3", "RANK=1 WORLD_SIZE=3", "RANK=2 WORLD_SIZE=3"},
                           "--range iteration --iterations 5 --kernels 5");
  ChildProcess job;
  record_launcher(job, {"-o", out + "/"}, sh);
  INFO("stderr: " << job.err());
  CHECK(job.err().find("removed 1 trace of an earlier recording") != std::string::npos);
  CHECK(job.err().find("3 traces written to " + out) != std::string::npos);
  CHECK(job.err().find("strata summary " + out) != std::string::npos);

  CHECK(rank_files(out) == std::vector<std::string>{"rank-0.pt.trace.json", "rank-1.pt.trace.json",
                                                    "rank-2.pt.trace.json"});
  CHECK(std::filesystem::exists(out + "/notes.txt"));  // only rank files are cleared
  for (int r = 0; r < 3; ++r) {
    CAPTURE(r);
    const RankFile f = read_rank_file(out + "/rank-" + std::to_string(r) + ".pt.trace.json");
    REQUIRE_MESSAGE(f.summary.parsed, f.summary.error);
    CHECK(f.rank == r);
    CHECK(f.world_size == 3);
    CHECK(f.summary.categories.at("kernel") == 25);  // recorded from CUDA's start to the exit
    CHECK(f.iterations.size() == 5);
  }
  const JobSummary j = summarize_job(out);
  CHECK(j.world_size == 3);
  CHECK(j.ranks == std::vector<std::pair<int64_t, std::string>>{
                       {0, "rank-0.pt.trace.json"}, {1, "rank-1.pt.trace.json"}, {2, "rank-2.pt.trace.json"}});
  CHECK_MESSAGE(j.notes.find("ranks taken from") == std::string::npos, j.notes);  // from distributedInfo
}

TEST_CASE("strata record -o DIR/ --gzip: a rank from Open MPI's variables, pid-P for a process without one") {
  JobTest t;
  const std::string out = t.dir / "run";
  const auto sh = launcher({"OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=2", ""}, "--iterations 3 --kernels 2");
  ChildProcess job;
  record_launcher(job, {"--gzip", "-o", out + "/"}, sh);
  INFO("stderr: " << job.err());
  const std::vector<pid_t> pids = wait_ready(job, 2, 0);
  REQUIRE(pids.size() == 2);
  const std::vector<std::string> files = rank_files(out);
  REQUIRE(files.size() == 2);
  CHECK(files[0] == "rank-0.pt.trace.json.gz");
  const bool pid_named = files[1] == "pid-" + std::to_string(pids[0]) + ".pt.trace.json.gz" ||
                         files[1] == "pid-" + std::to_string(pids[1]) + ".pt.trace.json.gz";
  CHECK_MESSAGE(pid_named, files[1]);
  const RankFile ranked = read_rank_file(out + "/" + files[0]);
  REQUIRE_MESSAGE(ranked.summary.parsed, ranked.summary.error);
  CHECK(ranked.rank == 0);
  CHECK(ranked.world_size == 2);
  const RankFile unranked = read_rank_file(out + "/" + files[1]);
  REQUIRE_MESSAGE(unranked.summary.parsed, unranked.summary.error);
  CHECK(unranked.rank == -1);  // no distributedInfo
  CHECK(unranked.summary.categories.at("kernel") == 6);
}

TEST_CASE("strata attach lists a job with its ranks; --job records every rank at the same time") {
  JobTest t;
  ChildProcess sh;
  const std::vector<std::string> ranks = {"RANK=0 WORLD_SIZE=3", "RANK=1 WORLD_SIZE=3", "RANK=2 WORLD_SIZE=3"};
  REQUIRE(sh.start(launcher(ranks, "--seconds 2 --kernels 5 --sleep-us 1000"), t.injected(), is_rank_or_agent_variable));
  REQUIRE(wait_ready(sh, 3).size() == 3);
  const std::string launcher_pid = std::to_string(sh.pid());

  std::string listed, err;
  CHECK(ChildProcess::run({STRATA_CLI, "attach"}, &listed, &err) == 0);
  INFO("strata attach: " << listed << err);
  CHECK(listed.find("job " + launcher_pid + ": /bin/sh -c") != std::string::npos);
  for (const char* rank : {" 0/3 ", " 1/3 ", " 2/3 "}) CHECK(listed.find(rank) != std::string::npos);
  CHECK(listed.find("strata attach --job " + launcher_pid) != std::string::npos);

  const std::string out = t.dir / "attached";
  std::string printed;
  const int status = ChildProcess::run(
      {STRATA_CLI, "attach", "--job", launcher_pid, "--duration", "0.4", "-o", out}, &printed, &err, 30000);
  INFO("strata attach --job: " << err);
  CHECK(status == 0);
  CHECK(printed == out + "\n");
  CHECK(err.find("the 3 agents of job " + launcher_pid + " answered the start within") != std::string::npos);
  REQUIRE(rank_files(out) == std::vector<std::string>{"rank-0.pt.trace.json", "rank-1.pt.trace.json",
                                                      "rank-2.pt.trace.json"});
  std::vector<RankFile> files;
  for (int r = 0; r < 3; ++r) {
    files.push_back(read_rank_file(out + "/rank-" + std::to_string(r) + ".pt.trace.json"));
    REQUIRE_MESSAGE(files.back().summary.parsed, files.back().summary.error);
    CHECK(files.back().rank == r);
    CHECK(files.back().summary.categories.count("kernel") == 1);
  }
  // The recordings ran at the same time: each began within 100 ms of the others (the requests
  // go out together; a rank's first kernel follows within its 1 ms sleep) and ran its 0.4 s.
  double first = 1e300, last_first = 0, first_end = 1e300;
  for (const RankFile& f : files) {
    first = std::min(first, f.first_ns);
    last_first = std::max(last_first, f.first_ns);
    first_end = std::min(first_end, f.last_ns);
    CHECK(f.last_ns - f.first_ns > 300e6);
  }
  CHECK(last_first - first < 100e6);
  CHECK(last_first < first_end);

  const JobSummary j = summarize_job(out);
  CHECK(j.world_size == 3);
  CHECK(j.ranks.size() == 3);
  for (size_t r = 0; r < j.ranks.size(); ++r) CHECK(j.ranks[r].first == static_cast<int64_t>(r));
  CHECK(sh.wait(20000));
}

TEST_CASE("record_job --iterations: ranks in lockstep record the same iterations") {
  JobTest t;
  ChildProcess sh;
  const std::vector<std::string> ranks = {"RANK=0 WORLD_SIZE=3", "RANK=1 WORLD_SIZE=3", "RANK=2 WORLD_SIZE=3"};
  constexpr int64_t kPeriodMs = 200;  // each iteration starts on the next multiple of 200 ms on every rank
  REQUIRE(sh.start(launcher(ranks, "--seconds 2.5 --kernels 3 --range iteration --lockstep-ms 200"), t.injected(),
                   is_rank_or_agent_variable));
  REQUIRE(wait_ready(sh, 3).size() == 3);

  std::vector<JobInfo> jobs;
  const Status listed = list_jobs(jobs);
  INFO("list_jobs: " << listed.message());
  const auto ours = std::find_if(jobs.begin(), jobs.end(), [&](const JobInfo& j) { return j.launcher == sh.pid(); });
  REQUIRE(ours != jobs.end());
  REQUIRE(ours->agents.size() == 3);
  for (int64_t r = 0; r < 3; ++r) {
    CHECK(ours->agents[r].rank == r);
    CHECK(ours->agents[r].world_size == 3);
  }
  CHECK(ours->command.find("/bin/sh -c") == 0);
  CHECK(job_under(sh.pid(), listed_agents()).agents.size() == 3);

  // Asked a quarter into an iteration, so that every rank arms before the next one begins.
  using namespace std::chrono;
  const int64_t now = duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
  std::this_thread::sleep_for(milliseconds((kPeriodMs + kPeriodMs / 4 - now % kPeriodMs) % kPeriodMs));
  RecordOptions opt;
  opt.iterations = 2;
  opt.output_dir = t.dir / "iterations";
  std::vector<std::string> states;  // progress: each rank's state as it was last told
  const MultiRecording m = require_ok(record_job(*ours, opt, nullptr, [&](const MultiRecording& p) {
    for (const AgentRecording& a : p.agents) states.push_back(a.state);
  }));
  REQUIRE(m.agents.size() == 3);
  CHECK(m.finished());
  CHECK(m.start_window_ms < kPeriodMs / 2);
  CHECK(std::count(states.begin(), states.end(), "armed") >= 3);
  std::set<std::vector<std::string>> recorded;
  for (const AgentRecording& a : m.agents) {
    CAPTURE(a.rank);
    CHECK_MESSAGE(a.status.is_ok(), a.status.message());
    CHECK(a.output == opt.output_dir + "/rank-" + std::to_string(a.rank) + ".pt.trace.json");
    const RankFile f = read_rank_file(a.output);
    CHECK(f.iterations.size() == 2);
    recorded.insert(f.iterations);
  }
  CHECK_MESSAGE(recorded.size() == 1, "the ranks recorded different iterations");
  CHECK(sh.wait(20000));
}

TEST_CASE("AttachSession::start_job: the viewer's live view of a job, every rank's file growing") {
  JobTest t;
  ChildProcess sh;
  // 20 kernels every 1 ms: a rank fills a 2 MiB CUPTI buffer about every 0.5 s, so its file grows
  // while the recording runs.
  REQUIRE(sh.start(launcher({"RANK=0 WORLD_SIZE=2", "RANK=1 WORLD_SIZE=2"}, "--seconds 2.5 --kernels 20 --sleep-us 1000"),
                   t.injected(), is_rank_or_agent_variable));
  REQUIRE(wait_ready(sh, 2).size() == 2);
  const JobInfo job = job_under(sh.pid(), listed_agents());
  REQUIRE(job.agents.size() == 2);

  AttachSession s(std::chrono::milliseconds(100));
  RecordOptions opt;
  opt.duration_ms = 1200;
  opt.output_dir = t.dir / "live";
  const Status started = s.start_job(job, opt);
  REQUIRE_MESSAGE(started.is_ok(), started.message());
  CHECK(s.is_job());
  CHECK(s.output() == opt.output_dir);
  int live_reloads = 0, final_loads = 0;  // live: while recording, with every rank's file begun
  for (int i = 0; i < 500 && !s.done(); ++i) {
    const auto action = s.next(SteadyClock::now(), false);
    if (action == AttachSession::Action::Reload) {
      const auto agents = s.agents();
      const bool every_rank = agents.size() == 2 && std::all_of(agents.begin(), agents.end(), [](const AgentRecording& a) {
                                return file_size(a.output) > 0;
                              });
      if (every_rank && s.active()) ++live_reloads;
      s.shown(1);
    }
    if (action == AttachSession::Action::FinalLoad) ++final_loads;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  INFO("error: " << s.status().message());
  CHECK(s.state() == AttachSession::State::Finished);
  CHECK(final_loads == 1);
  CHECK(live_reloads >= 1);
  const auto agents = s.agents();
  REQUIRE(agents.size() == 2);
  uint64_t events = 0;
  for (const AgentRecording& a : agents) {
    CHECK(a.state == "finished");
    CHECK(a.output == opt.output_dir + "/rank-" + std::to_string(a.rank) + ".pt.trace.json");
    events += a.result.events;
  }
  CHECK(s.result().events == events);
  CHECK(s.result().output == opt.output_dir);
  CHECK(sh.wait(20000));
}
