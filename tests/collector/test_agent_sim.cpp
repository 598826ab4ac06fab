// libstrata_agent.so's own code -- subscribing, enabling kinds, the buffer pool, iteration
// triggers from NVTX callbacks, flushing, writing the trace -- without a GPU: each test runs
// strata_sim_job, which loads the real agent over a CUPTI simulator (sim/), drives it
// through its environment or its real control socket, and checks the trace it wrote against
// the simulator's own counts (SIMSTATS).
#include <doctest/doctest.h>

#include <simdjson.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "client/agents.h"
#include "core/loader.h"
#include "helpers.h"
#include "json_check.h"
#include "protocol/message.h"
#include "sim_job.h"

using namespace strata;
using namespace strata::collector;
using strata::collector::test::SimJob;
using strata::collector::test::ask;
using strata::collector::test::field;
using strata::collector::test::wait_for_status;

namespace {

// What a finished trace holds, read with a JSON parser.
struct TraceFacts {
  test::TraceSummary summary;  // categories, flow ids, X names (json_check.h)
  std::set<uint64_t> kernel_correlations;
  std::set<uint64_t> kernel_streams;
  bool has_collector = false;  // the closing "collector" block: finish() ran
  uint64_t records = 0;        // collector.records: CUPTI records the agent decoded
  uint64_t dropped = 0;        // collector.droppedRecords
  uint64_t unmatched_ranges = 0;

  int count(const std::string& cat) const {
    const auto it = summary.categories.find(cat);
    return it == summary.categories.end() ? 0 : it->second;
  }
  int named(const std::string& name) const {
    const auto it = summary.names.find(name);
    return it == summary.names.end() ? 0 : it->second;
  }
  int kernels() const { return count("kernel"); }
};

TraceFacts read_facts(const std::string& path) {
  TraceFacts f;
  const std::string json = test::read_file(path);
  f.summary = test::summarize(json);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(json).get(doc) != simdjson::SUCCESS) return f;
  simdjson::dom::object collector;
  if (doc["collector"].get(collector) == simdjson::SUCCESS) {
    f.has_collector = collector["records"].get(f.records) == simdjson::SUCCESS &&
                      collector["droppedRecords"].get(f.dropped) == simdjson::SUCCESS &&
                      collector["unmatchedRanges"].get(f.unmatched_ranges) == simdjson::SUCCESS;
  }
  simdjson::dom::array events;
  if (doc["traceEvents"].get(events) != simdjson::SUCCESS) return f;
  for (simdjson::dom::element e : events) {
    std::string_view cat, ph;
    if (e["cat"].get(cat) != simdjson::SUCCESS || cat != "kernel" || e["ph"].get(ph) != simdjson::SUCCESS || ph != "X")
      continue;
    uint64_t correlation = 0, stream = 0;
    if (e["args"]["correlation"].get(correlation) == simdjson::SUCCESS) f.kernel_correlations.insert(correlation);
    if (e["args"]["stream"].get(stream) == simdjson::SUCCESS) f.kernel_streams.insert(stream);
  }
  return f;
}

// The trace as the viewer loads it.
struct Loaded {
  bool ok = false;
  std::string error;
  bool truncated = false;        // the loader kept what came before a cut-off end
  size_t kernels = 0;
  size_t kernels_with_launch = 0;  // linked (by their ac2g flow) to a cudaLaunchKernel
};

Loaded load(const std::string& path) {
  Loaded out;
  LoadResult r = load_trace(path);
  out.ok = r.model != nullptr;
  out.error = r.error();
  if (!out.ok) return out;
  const TraceModel& m = *r.model;
  for (const std::string& w : m.warnings) out.truncated = out.truncated || w.find("truncated") != std::string::npos;
  for (EventId e = 0; e < m.ev.size(); ++e) {
    if (m.ev.category(e) != Cat::Kernel) continue;
    ++out.kernels;
    const EventId launch = m.ev.link[e];
    if (launch != kNoEvent && m.name_of(launch) == "cudaLaunchKernel") ++out.kernels_with_launch;
  }
  return out;
}

// The simulator counted the agent's cuptiSubscribe: the agent's CUPTI calls landed there and
// not in a real libcupti.
void check_agent_used_simulator(const SimJob& job) { CHECK(job.stat("subscribe_calls") == 1); }

}  // namespace

TEST_CASE("sim agent: `strata record --iterations 3` records exactly three NVTX iterations") {
  SimJob job;
  RecordOptions opt;
  opt.iterations = 3;
  opt.output = job.path("three.pt.trace.json");
  REQUIRE_MESSAGE(
      job.start_recorded(opt, {"--range", "iteration", "--threads", "1", "--iterations", "10", "--kernels", "5"}),
      job.error());
  REQUIRE_MESSAGE(job.wait(), job.error());
  INFO("stderr: " << job.err());
  check_agent_used_simulator(job);
  CHECK(job.stat("kernels_produced") == 15);  // kernels were on for iterations 1-3 only
  CHECK(job.stat("kinds_enabled_at_end") == 0);
  CHECK(job.stat("records_dropped") == 0);

  const TraceFacts f = read_facts(opt.output);
  REQUIRE_MESSAGE(f.summary.parsed, f.summary.error);
  REQUIRE(f.has_collector);
  CHECK(f.summary.devices == 1);  // read from the driver stand-in
  CHECK(f.named("iteration") == 3);
  CHECK(f.unmatched_ranges == 0);  // the first range's start (supplied by the agent) was paired
  CHECK(f.kernels() == 15);
  CHECK(f.kernel_correlations.size() == 15);
  CHECK(f.kernel_streams == std::set<uint64_t>{1});
  CHECK(f.summary.flow_ends == f.kernel_correlations);  // every kernel has its flow...
  CHECK(f.summary.flow_starts == f.summary.flow_ends);  // ...from a launch
  CHECK(f.named("cudaLaunchKernel") == 15);
  CHECK(f.named("cudaDeviceSynchronize") == 6);  // 3 calls (cuda_runtime), 3 syncs (cuda_sync)
  CHECK(f.named("cudaGetDevice") == 0);          // noisy: switched off per API
  CHECK(f.records + f.dropped == job.stat("records_produced"));
  CHECK(f.dropped == 0);

  const Loaded l = load(opt.output);
  REQUIRE_MESSAGE(l.ok, l.error);
  CHECK_FALSE(l.truncated);
  CHECK(l.kernels == 15);
  CHECK(l.kernels_with_launch == 15);
}

TEST_CASE("sim agent: attach mid-run to a dormant 4-thread job for 300 ms") {
  SimJob job;
  REQUIRE_MESSAGE(job.start({"--threads", "4", "--seconds", "3", "--kernels", "5", "--sleep-us", "200"}), job.error());
  RecordOptions opt;
  opt.duration_ms = 300;
  opt.output = job.path("attach.pt.trace.json");
  const Result<RecordResult> result = job.record(opt);
  REQUIRE_MESSAGE(result.is_ok(), result.status().message());
  CHECK(result->output == opt.output);
  REQUIRE_MESSAGE(job.wait(), job.error());
  INFO("stderr: " << job.err());
  check_agent_used_simulator(job);
  CHECK(job.stat("kinds_enabled_at_end") == 0);

  const TraceFacts f = read_facts(opt.output);
  REQUIRE_MESSAGE(f.summary.parsed, f.summary.error);
  REQUIRE(f.has_collector);
  CHECK(f.kernel_streams == std::set<uint64_t>{1, 2, 3, 4});
  CHECK(f.summary.flow_starts == f.summary.flow_ends);
  const auto flow_to_kernel = [&](uint64_t id) { return f.kernel_correlations.count(id) == 1; };
  CHECK(std::all_of(f.summary.flow_ends.begin(), f.summary.flow_ends.end(), flow_to_kernel));
  // A launch cut by the recording's end may lose its API record: at most one per thread.
  CHECK(f.summary.flow_ends.size() + 4 >= f.kernel_correlations.size());
  // Noisy calls are filtered, also those other threads make while the agent switches them off
  // one by one after enabling the RUNTIME kind (CUPTI lets the kind override earlier switches).
  CHECK(f.named("cudaGetDevice") == 0);
  // Every record CUPTI produced while recording is in the file, counted as dropped, or one of
  // the noisy calls the agent leaves out.
  CHECK(static_cast<uint64_t>(f.kernels()) + job.stat("kernels_dropped") == job.stat("kernels_produced"));
  CHECK(f.records + job.stat("records_dropped") + job.stat("noisy_records_stored") == job.stat("records_produced"));
  CHECK(f.dropped == job.stat("records_dropped"));
  CHECK(result->dropped == f.dropped);
  CHECK(job.stat("kernels_produced") > 100);
  // The window is the requested 300 ms (ticks are 100 ms apart), not the job's 3 s.
  const double span_ms = (f.summary.max_end - f.summary.min_ts) / 1000.0;
  CHECK(span_ms >= 250);
  CHECK(span_ms <= 1500);

  const Loaded l = load(opt.output);
  REQUIRE_MESSAGE(l.ok, l.error);
  CHECK_FALSE(l.truncated);
  CHECK(l.kernels == f.kernel_correlations.size());
  CHECK(l.kernels_with_launch == f.summary.flow_ends.size());
}

TEST_CASE("sim agent: a 4 MiB pool under a heavy launch rate: every record is written or counted as dropped") {
  SimJob job;
  REQUIRE_MESSAGE(job.start({"--threads", "4", "--seconds", "2", "--kernels", "50", "--kernel-ns", "100"},
                            {{"STRATA_BUFFER_MB", "4"}}),
                  job.error());
  RecordOptions opt;
  opt.duration_ms = 1000;
  opt.output = job.path("tiny_pool.pt.trace.json");
  const Result<RecordResult> result = job.record(opt);
  REQUIRE_MESSAGE(result.is_ok(), result.status().message());
  REQUIRE_MESSAGE(job.wait(30000), job.error());
  INFO("stderr: " << job.err());
  CHECK(job.seconds_run() < 20);  // 2 s of work: never held up by the agent
  check_agent_used_simulator(job);
  MESSAGE("produced " << job.stat("records_produced") << " records, dropped " << job.stat("records_dropped")
                      << ", buffer requests refused " << job.stat("buffers_refused"));

  const TraceFacts f = read_facts(opt.output);
  REQUIRE_MESSAGE(f.summary.parsed, f.summary.error);
  REQUIRE(f.has_collector);
  CHECK(f.records > 0);
  // Every record CUPTI stored is in the file: none lost between buffers, pool and writer.
  CHECK(f.records + job.stat("records_dropped") + job.stat("noisy_records_stored") == job.stat("records_produced"));
  // The agent reports every drop it read from CUPTI, in the file and in `status`.
  CHECK(f.dropped == job.stat("dropped_reported"));
  CHECK(result->dropped == f.dropped);
  // Drops after the last completed buffer too: the agent asks once more after its final flush.
  CHECK(f.dropped == job.stat("records_dropped"));
  CHECK(job.stat("dropped_unread_at_finalize") == 0);
  CHECK(f.summary.flow_starts == f.summary.flow_ends);
}

TEST_CASE("sim agent: a recording reaches its file while it runs, and the file read mid-way loads") {
  // The viewer's live view re-reads the growing file: each full buffer must be written as
  // CUPTI hands it back, not at the end (on an H100 a 4 s attach gains ~6 MB every ~0.5 s).
  SimJob job;
  REQUIRE_MESSAGE(job.start({"--threads", "2", "--seconds", "4", "--kernels", "10", "--sleep-us", "100"}),
                  job.error());
  RecordOptions opt;
  opt.duration_ms = 2500;
  opt.output = job.path("growing.pt.trace.json");
  Result<RecordResult> result = Status(StatusCode::Internal, "the recording did not run");
  std::atomic<bool> done{false};
  std::thread recorder([&] {
    result = job.record(opt);
    done = true;
  });
  // Copies the file the first time it holds events while the agent still records.
  const std::string mid = job.path("mid.pt.trace.json");
  bool copied = false;
  while (!done && !copied) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const std::string text = test::read_file(opt.output);
    if (text.find("\"cat\": \"kernel\"") == std::string::npos) continue;
    if (field(ask(job.pid(), "status"), "state") != "recording") break;
    std::ofstream(mid, std::ios::binary) << text;
    copied = true;
  }
  recorder.join();
  REQUIRE_MESSAGE(result.is_ok(), result.status().message());
  REQUIRE_MESSAGE(job.wait(), job.error());
  INFO("stderr: " << job.err());
  REQUIRE_MESSAGE(copied, "no event reached the file before the recording ended");
  MESSAGE("job ran " << job.seconds_run() << " s; " << job.stat("records_produced") << " records");

  const Loaded partial = load(mid);
  REQUIRE_MESSAGE(partial.ok, partial.error);
  CHECK(partial.truncated);
  CHECK(partial.kernels > 0);
  const Loaded whole = load(opt.output);
  REQUIRE_MESSAGE(whole.ok, whole.error);
  CHECK_FALSE(whole.truncated);
  CHECK(whole.kernels > partial.kernels);
  const TraceFacts f = read_facts(opt.output);
  CHECK(f.records + job.stat("records_dropped") + job.stat("noisy_records_stored") == job.stat("records_produced"));
}

TEST_CASE("sim agent: the job exits while a recording runs; the file is complete") {
  SimJob job;
  REQUIRE_MESSAGE(job.start({"--threads", "2", "--seconds", "1", "--kernels", "5", "--sleep-us", "500"}), job.error());
  RecordOptions opt;
  opt.duration_ms = 60000;
  opt.output = job.path("cut_short.pt.trace.json");
  const Message reply = ask(job.pid(), start_request(opt), 5000);
  REQUIRE_MESSAGE(!is_error(reply), error_text(reply));
  REQUIRE_MESSAGE(job.wait(), job.error());  // the agent's atexit handler closes the file
  INFO("stderr: " << job.err());
  check_agent_used_simulator(job);

  const TraceFacts f = read_facts(opt.output);
  REQUIRE_MESSAGE(f.summary.parsed, f.summary.error);
  CHECK(f.has_collector);
  CHECK(f.kernels() > 0);
  CHECK(static_cast<uint64_t>(f.kernels()) + job.stat("kernels_dropped") == job.stat("kernels_produced"));
  CHECK(f.records + job.stat("records_dropped") + job.stat("noisy_records_stored") == job.stat("records_produced"));
  CHECK(f.kernel_streams == std::set<uint64_t>{1, 2});

  const Loaded l = load(opt.output);
  REQUIRE_MESSAGE(l.ok, l.error);
  CHECK_FALSE(l.truncated);
  CHECK(l.kernels == static_cast<size_t>(f.kernels()));
}

TEST_CASE("sim agent: stop while armed for iterations that never come") {
  SimJob job;
  const std::string agent = SimJob::agent_path();
  REQUIRE_MESSAGE(job.start({"--threads", "1", "--seconds", "3", "--range", "iteration", "--kernels", "5",
                             "--sleep-us", "1000"},
                            {{"NVTX_INJECTION64_PATH", agent}}),
                  job.error());
  RecordOptions opt;
  opt.iterations = 2;
  opt.pattern = "never-matches*";
  opt.output = job.path("armed.pt.trace.json");
  const Message started = ask(job.pid(), start_request(opt), 5000);
  REQUIRE_MESSAGE(!is_error(started), error_text(started));
  const Message armed = ask(job.pid(), "status");
  CHECK(field(armed, "state") == "armed");
  CHECK(field(armed, "gpu") == "Strata Simulated GPU");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // iterations pass, none matches
  CHECK(field(ask(job.pid(), "status"), "state") == "armed");

  const Message stopped = ask(job.pid(), "stop", 30000);
  REQUIRE_MESSAGE(!is_error(stopped), error_text(stopped));
  CHECK(field(stopped, "state") == "dormant");
  CHECK(field(stopped, "recordings") == "1");
  CHECK(field(stopped, "output") == opt.output);
  const Message status = ask(job.pid(), "status");
  CHECK(field(status, "state") == "dormant");
  REQUIRE_MESSAGE(job.wait(), job.error());
  INFO("stderr: " << job.err());
  check_agent_used_simulator(job);
  CHECK(job.stat("nvtx_callbacks_delivered") > 0);  // the NVTX trigger was armed and saw the ranges
  CHECK(job.stat("records_produced") == 0);         // and never enabled a kind
  CHECK(job.stat("kinds_enabled_at_end") == 0);

  const TraceFacts f = read_facts(opt.output);
  REQUIRE_MESSAGE(f.summary.parsed, f.summary.error);
  CHECK(f.has_collector);
  CHECK(f.kernels() == 0);
  CHECK(f.records == 0);
}

// CUPTI released between recordings (collector/README.md, "Between recordings"): the agent asks
// for cuptiFinalize when a recording's file is closed, the job's next CUDA call does it at its
// exit callsite, and the next recording subscribes again.

namespace {

// After the last release the job ran on with CUPTI gone: calls were made, none instrumented.
void check_released_at_end(const SimJob& job, uint64_t releases) {
  CHECK(job.stat("finalize_calls") == releases);
  CHECK(job.stat("finalize_in_exit_callback") == releases);  // at a CUDA call's exit, as NVIDIA asks
  CHECK(job.stat("buffers_outstanding_at_finalize") == 0);   // nothing left in CUPTI's hands
  CHECK(job.stat("dropped_unread_at_finalize") == 0);
  CHECK(job.stat("api_calls_since_finalize") > 0);
  CHECK(job.stat("instrumented_calls_since_finalize") == 0);
  CHECK(job.stat("subscribed_at_end") == 0);
  CHECK(job.stat("kinds_enabled_at_end") == 0);
}

}  // namespace

TEST_CASE("sim agent: after a recording CUPTI is finalized at a CUDA call's exit; the job runs on uninstrumented") {
  SimJob job;
  RecordOptions opt;
  opt.iterations = 2;
  opt.output = job.path("two.pt.trace.json");
  REQUIRE_MESSAGE(job.start_recorded(opt, {"--range", "iteration", "--threads", "1", "--iterations", "60", "--kernels",
                                            "4", "--sleep-us", "5000"}),
                  job.error());
  REQUIRE_MESSAGE(job.wait(), job.error());
  INFO("stderr: " << job.err());
  CHECK(job.stat("subscribe_calls") == 1);
  check_released_at_end(job, 1);
  CHECK(job.stat("kernels_produced") == 8);

  const TraceFacts f = read_facts(opt.output);
  REQUIRE_MESSAGE(f.summary.parsed, f.summary.error);
  REQUIRE(f.has_collector);
  CHECK(f.named("iteration") == 2);
  CHECK(f.kernels() == 8);
  CHECK(f.summary.flow_ends == f.kernel_correlations);
}

TEST_CASE("sim agent: STRATA_TEARDOWN=0 keeps CUPTI subscribed between recordings") {
  SimJob job;
  RecordOptions opt;
  opt.iterations = 2;
  opt.output = job.path("kept.pt.trace.json");
  REQUIRE_MESSAGE(job.start_recorded(opt, {"--range", "iteration", "--threads", "1", "--iterations", "30", "--kernels",
                                            "4", "--sleep-us", "2000"},
                                     {{"STRATA_TEARDOWN", "0"}}),
                  job.error());
  REQUIRE_MESSAGE(job.wait(), job.error());
  INFO("stderr: " << job.err());
  CHECK(job.stat("subscribe_calls") == 1);
  CHECK(job.stat("finalize_calls") == 0);
  CHECK(job.stat("subscribed_at_end") == 1);
  CHECK(job.stat("kinds_enabled_at_end") == 0);
  const TraceFacts f = read_facts(opt.output);
  REQUIRE_MESSAGE(f.summary.parsed, f.summary.error);
  CHECK(f.named("iteration") == 2);
  CHECK(f.kernels() == 8);
}

TEST_CASE("sim agent: recordings after a release subscribe again, by duration and by NVTX iterations") {
  SimJob job;
  const std::string agent = SimJob::agent_path();
  REQUIRE_MESSAGE(job.start({"--range", "iteration", "--threads", "2", "--seconds", "8", "--kernels", "4",
                             "--sleep-us", "1000"},
                            {{"NVTX_INJECTION64_PATH", agent}}),
                  job.error());
  CHECK(field(ask(job.pid(), "status"), "cupti") == "attached");  // dormant, never recorded

  std::vector<std::string> outputs;
  for (int i = 0; i < 3; ++i) {
    CAPTURE(i);
    RecordOptions opt;
    if (i == 1) opt.iterations = 3;  // armed on NVTX ranges of a re-subscribed CUPTI
    else opt.duration_ms = 200;
    opt.output = job.path("again" + std::to_string(i) + ".pt.trace.json");
    const Result<RecordResult> result = job.record(opt);
    REQUIRE_MESSAGE(result.is_ok(), result.status().message());
    CHECK(wait_for_status(job.pid(), "cupti", "released") == "released");
    outputs.push_back(opt.output);
  }
  REQUIRE_MESSAGE(job.wait(), job.error());
  INFO("stderr: " << job.err());
  CHECK(job.stat("subscribe_calls") == 3);
  check_released_at_end(job, 3);

  for (size_t i = 0; i < outputs.size(); ++i) {
    CAPTURE(i);
    const TraceFacts f = read_facts(outputs[i]);
    REQUIRE_MESSAGE(f.summary.parsed, f.summary.error);
    REQUIRE(f.has_collector);
    CHECK(f.kernels() > 0);
    CHECK(f.summary.flow_starts == f.summary.flow_ends);
    CHECK(f.named("cudaGetDevice") == 0);
    if (i == 1) {
      CHECK(f.named("iteration") == 3);
      CHECK(f.unmatched_ranges == 0);
    }
  }
}

TEST_CASE("sim agent: a recording that starts before any CUDA call cancels the pending release") {
  SimJob job;
  REQUIRE_MESSAGE(job.start({"--threads", "1", "--seconds", "0.3", "--kernels", "4", "--sleep-us", "1000",
                             "--idle-ms", "4000"}),
                  job.error());
  REQUIRE_MESSAGE(job.wait_for_line("idle"), "the job's work did not end: " << job.out());
  RecordOptions opt;
  opt.duration_ms = 100;
  opt.output = job.path("idle1.pt.trace.json");
  const Result<RecordResult> result = job.record(opt);
  REQUIRE_MESSAGE(result.is_ok(), result.status().message());
  CHECK(field(ask(job.pid(), "status"), "cupti") == "releasing");  // no CUDA call to do it

  opt.output = job.path("idle2.pt.trace.json");
  const Message started = ask(job.pid(), start_request(opt), 5000);
  REQUIRE_MESSAGE(!is_error(started), error_text(started));
  CHECK(field(ask(job.pid(), "status"), "cupti") == "attached");
  const Message stopped = ask(job.pid(), "stop", 30000);
  REQUIRE_MESSAGE(!is_error(stopped), error_text(stopped));
  CHECK(field(stopped, "recordings") == "2");
  CHECK(field(ask(job.pid(), "status"), "cupti") == "releasing");

  REQUIRE_MESSAGE(job.wait(), job.error());
  INFO("stderr: " << job.err());
  CHECK(job.stat("subscribe_calls") == 1);  // the subscription was kept, never renewed
  CHECK(job.stat("finalize_calls") == 0);
  CHECK(job.stat("kinds_enabled_at_end") == 0);
  for (const char* name : {"idle1.pt.trace.json", "idle2.pt.trace.json"}) {
    const TraceFacts f = read_facts(job.path(name));
    CHECK_MESSAGE(f.has_collector, name);
  }
}

TEST_CASE("sim agent: detach releases CUPTI, recorded or not") {
  for (const bool record_first : {false, true}) {
    CAPTURE(record_first);
    SimJob job;
    REQUIRE_MESSAGE(job.start({"--threads", "2", "--seconds", "1.5", "--kernels", "4", "--sleep-us", "1000"}),
                    job.error());
    if (record_first) {
      RecordOptions opt;
      opt.duration_ms = 100;
      opt.output = job.path("before_detach.pt.trace.json");
      const Result<RecordResult> result = job.record(opt);
      REQUIRE_MESSAGE(result.is_ok(), result.status().message());
      CHECK(read_facts(opt.output).kernels() > 0);
    }
    CHECK_FALSE(is_error(ask(job.pid(), "detach")));
    REQUIRE_MESSAGE(job.wait(), job.error());
    INFO("stderr: " << job.err());
    CHECK(job.stat("subscribe_calls") == 1);
    check_released_at_end(job, 1);
  }
}
