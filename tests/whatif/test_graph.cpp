// The replay graph on small made-up traces: its edges, and predictions worked out by hand; and
// its calibration (the unchanged replay gives back every measured time) on real traces too.
#include "core/job/job.h"
#include "core/text_format.h"
#include "core/whatif/whatif.h"
#include "test_util.h"
#include "two_rank_job.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace strata::test {
namespace {

using namespace whatif;

constexpr Ns kUs = 1000;

// A Kineto trace written event by event (times in µs). The training loop runs on pid 1 tid 1;
// GPU ops run on device 0, tid = stream.
struct TraceText {
  std::string events;
  int corr = 100;

  void add(const std::string& e) { events += (events.empty() ? "" : ",\n") + e; }
  void x(const char* cat, const std::string& name, int pid, int tid, double ts, double dur, const std::string& args = "") {
    add(strprintf(R"({"ph":"X","cat":"%s","name":"%s","pid":%d,"tid":%d,"ts":%.3f,"dur":%.3f,"args":{%s}})", cat,
                  name.c_str(), pid, tid, ts, dur, args.c_str()));
  }
  void step(int n, double ts, double dur) { x("user_annotation", "ProfilerStep#" + std::to_string(n), 1, 1, ts, dur); }
  // A call on the main thread; with `op`, the GPU op it puts on `stream`.
  int call(const char* name, double ts, double dur) {
    x("cuda_runtime", name, 1, 1, ts, dur, strprintf("\"correlation\":%d", ++corr));
    return corr;
  }
  void launch(double ts, double dur, const std::string& op, int stream, double op_ts, double op_dur, const char* cat = "kernel",
              const char* call_name = "cudaLaunchKernel") {
    int c = call(call_name, ts, dur);
    x(cat, op, 0, stream, op_ts, op_dur, strprintf("\"device\":0,\"stream\":%d,\"correlation\":%d", stream, c));
  }
  std::string json(const std::string& extra = "") const { return "{" + extra + "\"traceEvents\":[\n" + events + "\n]}"; }
};

// A trace loaded, annotated and made into a graph (which points at the model and annotation:
// they stay where they are).
struct Replayable {
  std::unique_ptr<TraceModel> model;
  Annotation annotation;
  Graph graph;
};
std::unique_ptr<Replayable> replayable(const std::string& json) {
  auto r = std::make_unique<Replayable>();
  r->model = must_load(json);
  r->annotation = annotate(*r->model);
  r->graph = build_graph(*r->model, r->annotation);
  return r;
}

Scenario scenario(const char* spec) {
  Result<Scenario> s = parse_scenario(spec, 2);
  REQUIRE_MESSAGE(s.is_ok(), s.status().message());
  return s.value();
}

Ns predicted(const Graph& g, const char* spec) { return what_if(g, {scenario(spec)}, "test").scenarios.at(0).predicted; }

Vertex vertex_of_event(const Replayable& r, std::string_view name) {
  EventId e = find_event(*r.model, name);
  for (Vertex v = 0; v < r.graph.size(); ++v)
    if (r.graph.event[v] == e) return v;
  return kNoVertex;
}

bool has_edge(const Graph& g, Point from, Point to, EdgeKind k) {
  for (uint32_t i = g.in_begin[to]; i < g.in_begin[to + 1]; ++i)
    if (g.edges[i].from == from && g.edges[i].kind == k) return true;
  return false;
}

// Every point replays at its measured time.
void check_exact(const Graph& g) {
  ReplayResult r = replay(g);
  for (Vertex v = 0; v < g.size(); ++v) {
    REQUIRE(r.start[v] == g.start[v]);
    REQUIRE(r.end[v] == g.start[v] + g.dur[v]);
  }
}

// Three 100 µs iterations, each ten 8 µs launches 2 µs apart whose 1 µs kernels start 1 µs
// after their launch returns: the host is the bottleneck.
std::string launch_bound_trace() {
  TraceText t;
  for (int k = 0; k < 3; ++k) {
    const double T = 1000 + 100 * k;
    t.step(k, T, 100);
    for (int i = 0; i < 10; ++i) t.launch(T + 2 + 10 * i, 8, "small_kernel", 7, T + 11 + 10 * i, 1);
  }
  return t.json();
}

TEST_CASE("launch-bound: no-launch-overhead leaves the host's 20 µs of work per iteration") {
  auto r = replayable(launch_bound_trace());
  const Graph& g = r->graph;
  REQUIRE(g.parts.size() == 1);
  CHECK(g.parts[0].launch_latency == 1 * kUs);
  CHECK(g.stats.edges[size_t(EdgeKind::Launch)] == 30);
  CHECK(g.stats.edges[size_t(EdgeKind::StreamOrder)] == 29);
  CHECK(g.stats.inferred_waits == 0);
  check_exact(g);
  Report rep = what_if(g, default_scenarios(), "launch-bound");
  CHECK(rep.measured == 100 * kUs);
  CHECK(rep.predicted == 100 * kUs);
  CHECK(predicted(g, "no-launch-overhead") == 20 * kUs);
  CHECK(predicted(g, "kernels-2x") == 100 * kUs);  // faster kernels do not help a host-bound loop
  CHECK(predicted(g, "comm-2x") == 100 * kUs);
  // The launches are the critical path's host part: 10 per iteration, on the main thread.
  uint64_t launches = 0;
  for (Vertex v : rep.baseline.critical_path) launches += g.kind[v] == VertexKind::Launch;
  CHECK(launches == 30);
}

// One 1100 µs iteration: ten 100 µs kernels launched up front and a cudaDeviceSynchronize
// that returns 2 µs after the last one ends.
std::string gpu_bound_trace() {
  TraceText t;
  const double T = 1000;
  t.step(0, T, 1100);
  for (int i = 0; i < 10; ++i) t.launch(T + 1 + 5 * i, 4, "big_kernel", 7, T + 6 + 100 * i, 100);
  t.call("cudaDeviceSynchronize", T + 51, 957);
  return t.json();
}

TEST_CASE("GPU-bound: kernels-2x halves the GPU's 1000 µs; the sync waits for the last kernel") {
  auto r = replayable(gpu_bound_trace());
  const Graph& g = r->graph;
  Vertex sync = vertex_of_event(*r, "cudaDeviceSynchronize");
  REQUIRE(sync != kNoVertex);
  CHECK(g.kind[sync] == VertexKind::HostWait);
  CHECK(g.stats.host_waits[size_t(HostWait::Device)] == 1);
  CHECK(g.work[sync] == 2 * kUs);  // its return latency; the rest was waiting
  check_exact(g);
  // 1100 - 500 µs: the kernels run back to back at half their time.
  CHECK(predicted(g, "kernels-2x") == 600 * kUs);
  CHECK(predicted(g, "kernel:big_kernel=2") == 600 * kUs);
  CHECK(predicted(g, "kernel:other*=2") == 1100 * kUs);
  // The first kernel starts 4 µs sooner (its launch takes no time): all of them do.
  CHECK(predicted(g, "no-launch-overhead") == 1096 * kUs);
  ReplayResult base = replay(g);
  // The critical path ends with the last kernel, the sync waiting for it, the host's last work.
  const auto& path = base.critical_path;
  REQUIRE(path.size() >= 3);
  CHECK(g.kind[path[path.size() - 3]] == VertexKind::GpuOp);
  CHECK(path[path.size() - 2] == sync);
  CHECK(g.kind[path.back()] == VertexKind::CpuWork);
}

// Kernel A (100 µs) on stream 7; stream 8 waits for the event recorded after it, then runs B.
std::string cross_stream_trace() {
  TraceText t;
  const double T = 1000;
  t.step(0, T, 200);
  t.launch(T + 1, 4, "kernel_A", 7, T + 6, 100);
  int record = t.call("cudaEventRecord", T + 6, 1);
  int wait = t.call("cudaStreamWaitEvent", T + 8, 1);
  t.x("cuda_sync", "Stream Wait Event", 0, 8, T + 8.5, 0.5,
      strprintf("\"stream\":8,\"wait_on_stream\":7,\"wait_on_cuda_event_record_corr_id\":%d,\"correlation\":%d", record, wait));
  t.launch(T + 10, 4, "kernel_B", 8, T + 106, 10);
  t.call("cudaDeviceSynchronize", T + 20, 97);
  return t.json();
}

// Three 1000 µs iterations: the loop's thread runs forward (one launch), then idles in
// backward() while the autograd thread launches 50 kernels, each call 10 µs, then steps.
std::string backward_thread_trace() {
  TraceText t;
  for (int i = 0; i < 3; ++i) {
    const double T = 1000 + 1000 * i;
    t.step(i, T, 1000);
    t.x("cpu_op", "aten::mm", 1, 1, T, 100);
    t.launch(T + 10, 5, "fwd_kernel", 7, T + 20, 10);
    t.x("cpu_op", "autograd::engine::evaluate_function: MmBackward0", 1, 2, T + 110, 580);
    for (int k = 0; k < 50; ++k) {
      const double ts = T + 111 + 11 * k;
      t.x("cuda_runtime", "cudaLaunchKernel", 1, 2, ts, 10, strprintf("\"correlation\":%d", ++t.corr));
      t.x("kernel", "bwd_kernel", 0, 7, ts + 12, 5, strprintf("\"device\":0,\"stream\":7,\"correlation\":%d", t.corr));
    }
    t.x("cpu_op", "Optimizer.step#SGD.step", 1, 1, T + 700, 290);
  }
  return t.json();
}

TEST_CASE("a thread that idled while another worked resumes after it: the loop waits for the autograd thread") {
  auto r = replayable(backward_thread_trace());
  const Graph& g = r->graph;
  check_exact(g);
  // The loop's thread waits for the backward's end, the autograd thread for the loop's forward.
  CHECK(g.stats.wakes >= 5);
  CHECK(g.stats.edges[size_t(EdgeKind::Wake)] >= 5);
  Report rep = what_if(g, default_scenarios(), "backward thread");
  CHECK(rep.predicted == 1000 * kUs);
  // Without its 500 µs of launch calls the backward ends about 500 µs sooner, and so does the
  // loop's wait for it (a rigid wait would keep the iteration at about 995 µs).
  const Ns no_launch = predicted(g, "no-launch-overhead");
  CHECK(no_launch < 550 * kUs);
  CHECK(no_launch > 400 * kUs);
}

TEST_CASE("cancel: a cancelled build gives an empty graph, a cancelled what-if stops before its scenarios") {
  auto r = replayable(backward_thread_trace());
  Progress cancelled;
  cancelled.cancel = true;
  Graph none = build_graph(*r->model, r->annotation, &cancelled);
  CHECK(none.status.is_cancelled());
  CHECK(none.size() == 0);
  Report rep = what_if(r->graph, default_scenarios(), "cancelled", &cancelled);
  CHECK(rep.status.is_cancelled());
  CHECK(rep.scenarios.empty());
  CHECK_FALSE(r->graph.status.is_cancelled());
}

TEST_CASE("cross-stream wait: stream 8's kernel waits for the op stream 7 recorded") {
  auto r = replayable(cross_stream_trace());
  const Graph& g = r->graph;
  Vertex a = vertex_of_event(*r, "kernel_A"), b = vertex_of_event(*r, "kernel_B");
  REQUIRE(a != kNoVertex);
  REQUIRE(b != kNoVertex);
  CHECK(g.stats.stream_waits_resolved == 1);
  CHECK(has_edge(g, end_point(a), start_point(b), EdgeKind::StreamWaitEvent));
  CHECK(g.stats.inferred_waits == 0);  // B's late start is explained
  check_exact(g);
  // A at half its time: B follows it at once, the sync 1 µs after B, then 83 µs of host work.
  Scenario s = scenario("kernel:kernel_A=2");
  ReplayResult rr = replay(g, scenario_scale(g, s).scale);
  CHECK(rr.start[b] == rr.end[a]);
  CHECK(rr.end[a] == g.start[a] + 50 * kUs);
  CHECK(rr.iteration == 150 * kUs);
}

TEST_CASE("a GPU op that starts late for no reason in the trace is an inferred wait, kept") {
  TraceText t;
  const double T = 1000;
  t.step(0, T, 100);
  t.launch(T + 1, 4, "k1", 7, T + 6, 5);
  t.launch(T + 12, 4, "k2", 7, T + 17, 5);
  t.launch(T + 30, 4, "k3", 7, T + 84, 5);  // could start at T + 35
  t.call("cudaDeviceSynchronize", T + 40, 50);
  auto r = replayable(t.json());
  const Graph& g = r->graph;
  CHECK(g.stats.inferred_waits == 1);
  CHECK(g.stats.inferred_wait_time == 49 * kUs);
  check_exact(g);
  // Faster kernels do not remove the unexplained wait: k3 still starts 49 µs after it could.
  Vertex k3 = vertex_of_event(*r, "k3");
  ReplayResult rr = replay(g, scenario_scale(g, scenario("kernels-2x")).scale);
  CHECK(rr.start[k3] == g.start[k3]);
  CHECK(rr.iteration == 100 * kUs - 5 * kUs / 2);
}

TEST_CASE("a synchronous copy's call ends after its copy") {
  TraceText t;
  const double T = 1000;
  t.step(0, T, 100);
  t.launch(T + 1, 4, "k1", 7, T + 6, 30);
  t.launch(T + 10, 50, "Memcpy DtoH (Device -> Pageable)", 7, T + 36, 20, "gpu_memcpy", "cudaMemcpy");
  auto r = replayable(t.json());
  const Graph& g = r->graph;
  Vertex copy_call = vertex_of_event(*r, "cudaMemcpy"), copy = vertex_of_event(*r, "Memcpy DtoH (Device -> Pageable)");
  CHECK(g.kind[copy_call] == VertexKind::HostWait);
  CHECK(has_edge(g, end_point(copy), end_point(copy_call), EdgeKind::HostWait));
  check_exact(g);
  // k1 at half its time: the copy starts 15 µs earlier and so does everything after it.
  CHECK(predicted(g, "kernel:k1=2") == 85 * kUs);
}

TEST_CASE("no iterations: the whole trace is replayed as one, and said so") {
  TraceText t;
  t.launch(1001, 4, "k1", 7, 1006, 5);
  t.call("cudaDeviceSynchronize", 1010, 2);
  auto r = replayable(t.json());
  const Graph& g = r->graph;
  REQUIRE(g.parts.size() == 1);
  CHECK(g.parts[0].whole_trace);
  check_exact(g);
  Report rep = what_if(g, default_scenarios(), "none");
  CHECK(rep.predicted == rep.measured);
  CHECK(rep.measured == r->model->time_end - r->model->time_begin);
  bool said = false;
  for (const std::string& n : rep.notes) said |= n.find("whole trace") != std::string::npos;
  CHECK(said);
}

TEST_CASE("a CPU-only trace replays its host time; GPU scenarios change nothing") {
  TraceText t;
  for (int k = 0; k < 3; ++k) {
    t.step(k, 1000 + 50 * k, 50);
    t.x("cpu_op", "aten::mm", 1, 1, 1001 + 50 * k, 40);
  }
  auto r = replayable(t.json());
  Report rep = what_if(r->graph, default_scenarios(), "cpu");
  CHECK(rep.measured == 50 * kUs);
  CHECK(rep.predicted == 50 * kUs);
  for (const ScenarioResult& s : rep.scenarios) CHECK(s.predicted == rep.predicted);
  CHECK(report_json(r->graph, rep).find("\"measured_ns\":50000") != std::string::npos);
}

TEST_CASE("scenario specs") {
  Result<Scenario> s = parse_scenario("kernel:*gemm*=2", 2);
  REQUIRE(s.is_ok());
  CHECK(s->effects.at(0).kind == Effect::Kind::Kernel);
  CHECK(s->effects[0].pattern == "*gemm*");
  s = parse_scenario("phase:data-loading=inf", 2);
  REQUIRE(s.is_ok());
  CHECK(s->effects.at(0).phase == PhaseKind::DataLoading);
  s = parse_scenario("kernels-2x,no-launch-overhead", 2);
  REQUIRE(s.is_ok());
  CHECK(s->effects.size() == 2);
  s = parse_scenario("amp", 3);
  REQUIRE(s.is_ok());
  CHECK(s->effects.at(0).value == 3);
  CHECK(parse_scenario("layer:Forward/layer1=1.5", 2).is_ok());
  for (const char* bad : {"faster", "kernel:x=0", "kernel:x=-1", "kernel:=2", "phase:lunch=2", "op:x=2", "", "kernel:x=fast"}) {
    Result<Scenario> refused = parse_scenario(bad, 2);
    CHECK_MESSAGE(!refused.is_ok(), bad);
    CHECK(!refused.status().message().empty());
  }
}

// Two ranks: rank 1's long kernel makes rank 0's allreduce wait; the collective ends 20 µs
// after the last rank arrives.
std::string rank_trace(int rank, double compute_us, double comm_start) {
  TraceText t;
  const double T = 1000;
  t.step(0, T, 300);
  t.launch(T + 1, 4, "gemm", 7, T + 6, compute_us);
  t.launch(T + 10, 4, "ncclKernel_AllReduce_RING_LL_Sum_float", rank == 0 ? 9 : 7, T + comm_start, 150 - comm_start);
  t.call("cudaDeviceSynchronize", T + 20, 131);
  return t.json(strprintf(R"("distributedInfo":{"backend":"nccl","rank":%d,"world_size":2},)", rank));
}

TEST_CASE("a job: a collective ends on no rank before the last one arrives") {
  const auto dir = std::filesystem::temp_directory_path() / ("strata_whatif_job_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "rank0.json") << rank_trace(0, 20, 30);
  std::ofstream(dir / "rank1.json") << rank_trace(1, 120, 130);
  Result<std::vector<JobFile>> files = job_files({dir.string()});
  REQUIRE(files.is_ok());
  REQUIRE(files->size() == 2);
  Job job = load_job(files.value(), {});
  REQUIRE(job.data.size() == 2);
  Graph g = build_job_graph(job);
  CHECK(g.parts.size() == 2);
  CHECK(g.stats.collectives_coupled == 1);
  CHECK(g.stats.edges[size_t(EdgeKind::Collective)] == 2);
  check_exact(g);
  Report rep = what_if(g, {scenario("kernel:gemm=2")}, dir.string());
  CHECK(rep.measured == 300 * kUs);
  CHECK(rep.predicted == 300 * kUs);
  // Rank 1's kernel takes 60 µs: it arrives at 70 µs, both ranks' allreduce ends at 90 µs and
  // both iterations are 60 µs shorter. Alone, rank 0 would not have gained anything.
  REQUIRE(rep.scenarios.size() == 1);
  CHECK(rep.scenarios[0].part_predicted.at(0) == 240 * kUs);
  CHECK(rep.scenarios[0].part_predicted.at(1) == 240 * kUs);
  CHECK(rep.scenarios[0].predicted == 240 * kUs);
  std::filesystem::remove_all(dir);
}

// The calibration check of the made-up traces above, on real ones (tests/data/traces and
// tests/data), each bringing what the made-up ones lack.
TEST_CASE("calibration on real traces: the unchanged replay gives back every measured time") {
  const std::vector<std::filesystem::path> traces = {
      find_trace("hta-alexnet-a100.pt.trace.json.gz"),                 // cuda_sync events, no ProfilerStep
      find_trace("hta-event-sync-multistream-a100.pt.trace.json.gz"),  // cross-stream event waits
      find_trace("hta-triton-a100.pt.trace.json.gz"),                  // cuLaunchKernel (driver API)
      find_trace("hta-rocm-mi250.pt.trace.json.gz"),                   // an AMD GPU
      find_trace("hta-cpu-only-gloo.pt.trace.json.gz"),                // no GPU at all
      find_trace("hotline-resnet50-rtx3090.pt.trace.json.gz"),         // no args: no correlation ids
      find_trace("hta-nccl-a100-2ranks.pt.trace.json.gz"),             // NCCL collectives, 3 steps
      test_data_dir() / "torch2/resnet18-train-h100.pt.trace.json.gz",  // PyTorch 2, H100, memory events
      test_data_dir() / "collector/mlp_5iter.pt.trace.json.gz",         // Strata's own recording
  };
  for (const auto& p : traces) STRATA_SKIP_UNLESS(!p.empty() && std::filesystem::exists(p), "a real trace is not here");
  for (const auto& p : traces) {
    CAPTURE(p.filename().string());
    LoadResult l = load_trace(p.string());
    REQUIRE_MESSAGE(l.model, l.error());
    const Annotation a = annotate(*l.model);
    const Graph g = build_graph(*l.model, a);
    REQUIRE(g.size() > 0);
    check_exact(g);
  }
}

TEST_CASE("calibration on a real job: two ranks coupled by their collectives replay at their measured times") {
  STRATA_REQUIRE_TRACE(rank, "hta-nccl-a100-2ranks.pt.trace.json.gz");
  const Job job = two_rank_job(rank, "calibration");
  const Graph g = build_job_graph(job);
  CHECK(g.stats.collectives_coupled > 0);
  check_exact(g);
}

}  // namespace
}  // namespace strata::test
