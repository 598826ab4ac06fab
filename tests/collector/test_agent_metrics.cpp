// --metrics over the CUPTI simulator's range profiler (sim/range_profiler_sim.cpp): the real
// agent profiles the launches whose kernels match --kernels, writes cuda_profiler_range events
// with the simulator's exact counters on their kernels' rows and times, tied to their launches
// by correlation id, and Strata's loader and annotation turn them into FLOPs per kernel. Without
// --metrics no range-profiler function is called; an unknown metric and a failing call are
// survived as collector/README.md says.
#include <doctest/doctest.h>

#include <simdjson.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "client/agents.h"
#include "core/annotate/annotation.h"
#include "core/loader.h"
#include "helpers.h"
#include "json_check.h"
#include "protocol/message.h"
#include "sim_job.h"

using namespace strata;
using namespace strata::collector;
using strata::collector::test::ask;
using strata::collector::test::field;
using strata::collector::test::SimJob;
using strata::collector::test::wait_for_status;

namespace {

constexpr const char* kFfma = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum";
constexpr const char* kDuration = "gpu__time_duration.sum";
constexpr const char* kFlopMetrics = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,gpu__time_duration.sum";
constexpr uint64_t kKernelNs = 5000;
// sim_api.h: the i-th known metric of a kernel of D ns named K is D * i * strlen(K); ffma is i = 6.
double sim_ffma(const std::string& kernel) { return double(kKernelNs) * 6 * double(kernel.size()); }

// One iteration: these kernels, in order; two match *gemm*.
const std::vector<std::string> kKernels = {"sgemm_128x64_nn", "relu_fwd", "hgemm_nt"};
std::vector<std::string> job_args(int iterations) {
  return {"--threads", "1", "--iterations", std::to_string(iterations), "--kernel-names",
          "sgemm_128x64_nn,relu_fwd,hgemm_nt", "--kernel-ns", std::to_string(kKernelNs)};
}

struct Range {
  std::string name;
  uint64_t correlation = 0;
  double ffma = -1, duration = -1;
  double ts = 0, dur = 0;
  uint64_t pid = 0, tid = 0;
};
struct Kernel {
  double ts = 0, dur = 0;
  uint64_t pid = 0, tid = 0;
  std::string name;
};
struct MetricsTrace {
  std::vector<Range> ranges;
  std::map<uint64_t, Kernel> kernels;  // by correlation
  std::vector<std::string> notes;
  uint64_t profiled_kernels = 0;
};

MetricsTrace read_metrics_trace(const std::string& path) {
  MetricsTrace t;
  const std::string json = test::read_file(path);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  REQUIRE(parser.parse(json).get(doc) == simdjson::SUCCESS);
  simdjson::dom::object collector;
  if (doc["collector"].get(collector) == simdjson::SUCCESS) {
    [[maybe_unused]] auto missing = collector["profiledKernels"].get(t.profiled_kernels);
    simdjson::dom::array notes;
    if (collector["notes"].get(notes) == simdjson::SUCCESS)
      for (simdjson::dom::element n : notes) t.notes.emplace_back(std::string_view(n.get_string().value_unsafe()));
  }
  simdjson::dom::array events;
  REQUIRE(doc["traceEvents"].get(events) == simdjson::SUCCESS);
  for (simdjson::dom::element e : events) {
    std::string_view cat, name;
    if (e["cat"].get(cat) != simdjson::SUCCESS || e["name"].get(name) != simdjson::SUCCESS) continue;
    const double ts = e["ts"].get_double().value_unsafe();
    double dur = 0;
    [[maybe_unused]] auto no_dur = e["dur"].get(dur);
    const uint64_t pid = e["pid"].get_uint64().value_unsafe(), tid = e["tid"].get_uint64().value_unsafe();
    if (cat == "kernel") {
      t.kernels[e["args"]["correlation"].get_uint64().value_unsafe()] = Kernel{ts, dur, pid, tid, std::string(name)};
    } else if (cat == "cuda_profiler_range") {
      Range r{std::string(name), e["args"]["correlation"].get_uint64().value_unsafe()};
      [[maybe_unused]] auto f = e["args"][kFfma].get(r.ffma);
      [[maybe_unused]] auto d = e["args"][kDuration].get(r.duration);
      r.ts = ts;
      r.dur = dur;
      r.pid = pid;
      r.tid = tid;
      t.ranges.push_back(r);
    }
  }
  return t;
}

// Every range is its gemm kernel's: same name, row and time, the simulator's exact values.
void check_ranges_match_kernels(const MetricsTrace& t) {
  for (const Range& r : t.ranges) {
    INFO("range " << r.name << " correlation " << r.correlation);
    CHECK(r.name.find("gemm") != std::string::npos);
    CHECK(r.ffma == sim_ffma(r.name));
    CHECK(r.duration == double(kKernelNs));
    const auto k = t.kernels.find(r.correlation);
    REQUIRE(k != t.kernels.end());
    CHECK(k->second.name == r.name);
    CHECK(k->second.ts == r.ts);
    CHECK(k->second.dur == r.dur);
    CHECK(k->second.pid == r.pid);
    CHECK(k->second.tid == r.tid);
  }
}

bool any_note_has(const MetricsTrace& t, const std::string& text) {
  for (const std::string& n : t.notes)
    if (n.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("metrics: `strata record --metrics ... --kernels '*gemm*'` profiles the gemm launches only, exactly") {
  SimJob job;
  RecordOptions opt;
  opt.output = job.path("metrics.pt.trace.json");
  opt.metrics = kFlopMetrics;
  opt.kernels = "*gemm*";
  REQUIRE_MESSAGE(job.start_recorded(opt, job_args(4)), job.error());
  REQUIRE_MESSAGE(job.wait(), job.error());
  INFO("stderr: " << job.err());
  CHECK(job.stat("ranges_decoded") == 8);  // 2 gemm kernels x 4 iterations, nothing else

  const MetricsTrace t = read_metrics_trace(opt.output);
  CHECK(t.kernels.size() == 12);
  REQUIRE(t.ranges.size() == 8);
  CHECK(t.profiled_kernels == 8);
  CHECK(t.notes.empty());
  check_ranges_match_kernels(t);

  // Strata's loader ties each range to its launch by correlation id, and the FLOPs are exact:
  // 2 x ffma per range, FLOP/s over gpu__time_duration.sum.
  LoadResult loaded = load_trace(opt.output);
  REQUIRE_MESSAGE(loaded.model != nullptr, loaded.error());
  const TraceModel& m = *loaded.model;
  size_t ranges = 0;
  for (EventId e = 0; e < m.ev.size(); ++e) {
    if (m.ev.category(e) != Cat::ProfilerRange) continue;
    ++ranges;
    const EventId launch = m.host_side_of(e);
    REQUIRE(launch != kNoEvent);
    CHECK(m.name_of(launch) == "cudaLaunchKernel");
    CHECK(m.correlation_of(launch) == m.correlation_of(e));
    const EventId kernel = m.gpu_op_of(launch);
    REQUIRE(kernel != kNoEvent);
    CHECK(m.name_of(kernel) == m.name_of(e));
  }
  CHECK(ranges == 8);
  const Annotation a = annotate(m);
  const FlopFigures& f = a.analyses.flops;
  CHECK(f.total.ranges == 8);
  CHECK(f.with_counters == 8);
  REQUIRE(f.kernels.size() == 2);
  for (const FlopStat& k : f.kernels) {
    INFO(k.name);
    CHECK(k.ranges == 4);
    CHECK(k.flops == 4 * 2 * sim_ffma(k.name));
    CHECK(k.timed == 4);
    CHECK(k.measured == Ns(4 * kKernelNs));
    CHECK(k.flop_per_s() == doctest::Approx(2 * sim_ffma(k.name) * 1e9 / double(kKernelNs)).epsilon(1e-12));
  }
  CHECK(f.kernels[0].name == "sgemm_128x64_nn");  // the longer name: more FLOPs
  // The kernels themselves count as GPU work once: the ranges on their rows add none.
  CHECK(a.analyses.kernel_total == Ns(12 * kKernelNs));
}

TEST_CASE("metrics: without --metrics the range profiler is never called") {
  SimJob job;
  RecordOptions opt;
  opt.output = job.path("plain.pt.trace.json");
  REQUIRE_MESSAGE(job.start_recorded(opt, job_args(3)), job.error());
  REQUIRE_MESSAGE(job.wait(), job.error());
  CHECK(job.stat("range_profiler_calls") == 0);
  CHECK(job.stat("ranges_decoded") == 0);
  const MetricsTrace t = read_metrics_trace(opt.output);
  CHECK(t.kernels.size() == 9);
  CHECK(t.ranges.empty());
}

TEST_CASE("metrics: an unknown metric is refused at attach (no file), noted at record (the recording goes on)") {
  const std::string metrics = std::string(kFfma) + ",bogus__metric.sum";
  SUBCASE("attach: an error reply naming the metric, no file, the job unharmed") {
    SimJob job;
    REQUIRE_MESSAGE(job.start({"--threads", "1", "--seconds", "1.5", "--sleep-us", "2000", "--kernel-names", "sgemm_a",
                               "--kernel-ns", std::to_string(kKernelNs)}),
                    job.error());
    RecordOptions opt;
    opt.output = job.path("refused.pt.trace.json");
    opt.duration_ms = 300;
    opt.metrics = metrics;
    const Message reply = ask(job.pid(), start_request(opt));
    CHECK(is_error(reply));
    CHECK(error_text(reply).find("unknown metric bogus__metric.sum on GH100") != std::string::npos);
    CHECK(::access(opt.output.c_str(), F_OK) != 0);
    CHECK(field(ask(job.pid(), "status"), "state") == "dormant");
    // The same agent records with good metrics afterwards.
    opt.metrics = kFlopMetrics;
    const Result<RecordResult> result = job.record(opt);
    REQUIRE_MESSAGE(result.is_ok(), result.status().message());
    REQUIRE_MESSAGE(job.wait(), job.error());
    CHECK(job.stat("range_profilers_enabled_at_end") == 0);
    const MetricsTrace t = read_metrics_trace(opt.output);
    CHECK_FALSE(t.ranges.empty());
    check_ranges_match_kernels(t);
  }
  SUBCASE("record: the trace and stderr say why, kernels are recorded without metrics") {
    SimJob job;
    RecordOptions opt;
    opt.output = job.path("unknown.pt.trace.json");
    opt.metrics = metrics;
    REQUIRE_MESSAGE(job.start_recorded(opt, job_args(2)), job.error());
    REQUIRE_MESSAGE(job.wait(), job.error());
    CHECK(job.err().find("unknown metric bogus__metric.sum") != std::string::npos);
    CHECK(job.stat("ranges_decoded") == 0);
    const MetricsTrace t = read_metrics_trace(opt.output);
    CHECK(t.kernels.size() == 6);
    CHECK(t.ranges.empty());
    CHECK(any_note_has(t, "hardware metrics stopped: unknown metric bogus__metric.sum"));
  }
}

TEST_CASE("metrics: attach to a dormant job; status shows the metrics while they are collected") {
  SimJob job;
  REQUIRE_MESSAGE(job.start({"--threads", "1", "--seconds", "2", "--sleep-us", "2000", "--kernel-names",
                             "sgemm_128x64_nn,relu_fwd,hgemm_nt", "--kernel-ns", std::to_string(kKernelNs)}),
                  job.error());
  RecordOptions opt;
  opt.output = job.path("attach.pt.trace.json");
  opt.metrics = kFlopMetrics;
  opt.kernels = "*gemm*";
  const Message started = ask(job.pid(), start_request(opt));
  REQUIRE_MESSAGE(!is_error(started), error_text(started));
  CHECK(wait_for_status(job.pid(), "metrics", "collecting") == "collecting");
  Message status;
  for (int i = 0; i < 500 && std::stoull("0" + field(status, "profiled_kernels")) < 4; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    status = ask(job.pid(), "status");
  }
  CHECK(std::stoull("0" + field(status, "profiled_kernels")) >= 4);
  CHECK(field(status, "metric_count") == "2");
  CHECK(field(status, "kernels") == "*gemm*");
  const Message stopped = ask(job.pid(), "stop", 10000);
  REQUIRE_MESSAGE(!is_error(stopped), error_text(stopped));
  REQUIRE_MESSAGE(job.wait(), job.error());
  CHECK(job.stat("range_profilers_enabled_at_end") == 0);
  const MetricsTrace t = read_metrics_trace(opt.output);
  REQUIRE_FALSE(t.ranges.empty());
  CHECK(t.ranges.size() == t.profiled_kernels);
  check_ranges_match_kernels(t);
  size_t gemm_kernels = 0;
  for (const auto& [correlation, k] : t.kernels) gemm_kernels += k.name.find("gemm") != std::string::npos;
  CHECK(t.ranges.size() == gemm_kernels);  // every gemm kernel recorded was profiled
}

TEST_CASE("metrics: DecodeData failing mid-recording stops metrics, not the recording") {
  SimJob job;
  RecordOptions opt;
  opt.output = job.path("fault.pt.trace.json");
  opt.metrics = kFlopMetrics;
  opt.kernels = "*gemm*";
  std::vector<std::string> args = job_args(4);
  args.insert(args.end(), {"--range-fault", "cuptiRangeProfilerDecodeData:3"});
  REQUIRE_MESSAGE(job.start_recorded(opt, args), job.error());
  REQUIRE_MESSAGE(job.wait(), job.error());
  CHECK(job.err().find("hardware metrics stopped: cuptiRangeProfilerDecodeData failed (CUPTI_ERROR_UNKNOWN)") !=
        std::string::npos);
  const MetricsTrace t = read_metrics_trace(opt.output);
  CHECK(t.kernels.size() == 12);  // every kernel still recorded
  CHECK(t.ranges.size() == 2);    // the two launches before the failing decode
  check_ranges_match_kernels(t);
  CHECK(any_note_has(t, "cuptiRangeProfilerDecodeData failed (CUPTI_ERROR_UNKNOWN); the recording went on without them"));
}
