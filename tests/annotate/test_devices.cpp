// Other devices' traces (MTIA, XPU, PrivateUse1 backends) and CUPTI's range profiler, from
// small hand-written traces shaped like real ones.
#include "core/trace_info.h"
#include "core/import/json_args.h"
#include "helpers.h"

#include <doctest/doctest.h>

#include <string>

using namespace strata;
using namespace strata::test;

namespace {

struct Json {
  std::string s = R"({"traceEvents": [)";
  void add(const std::string& e) { s += e + ",\n"; }
  void x(const char* cat, const std::string& name, int pid, int tid, int ts, int dur, const std::string& args = "{}") {
    add(R"({"ph": "X", "cat": ")" + std::string(cat) + R"(", "name": ")" + name + R"(", "pid": )" + std::to_string(pid) +
        R"(, "tid": )" + std::to_string(tid) + R"(, "ts": )" + std::to_string(ts) + R"(, "dur": )" + std::to_string(dur) +
        R"(, "args": )" + args + "}");
  }
  void process(int pid, const char* name, const char* labels) {
    add(R"({"ph": "M", "name": "process_name", "pid": )" + std::to_string(pid) + R"(, "tid": 0, "args": {"name": ")" + name + "\"}}");
    add(R"({"ph": "M", "name": "process_labels", "pid": )" + std::to_string(pid) + R"(, "tid": 0, "args": {"labels": ")" +
        labels + "\"}}");
  }
  std::unique_ptr<TraceModel> load() {
    s += R"({"ph": "i", "name": "end", "pid": 100, "tid": 1, "ts": 0, "s": "t"}]})";
    LoadResult r = load_trace_bytes("devices.json", s);
    INFO(r.error());
    REQUIRE(r.model);
    return std::move(r.model);
  }
};

EventId find_event(const TraceModel& m, std::string_view name) {
  for (EventId e = 0; e < m.ev.size(); ++e)
    if (m.name_of(e) == name) return e;
  return kNoEvent;
}

std::string corr(int c) { return R"({"correlation": )" + std::to_string(c) + "}"; }

// Two steps of `encoder` (linear, relu) and `head` (linear) on a CPU thread; each op makes one
// runtime call of `runtime_cat`, whose work runs as `device_cat` on process `dev_pid`, thread 408.
Json two_steps(const char* runtime_cat, const char* call, const char* device_cat, int dev_pid) {
  Json j;
  int c = 1;
  for (int step = 0; step < 2; ++step) {
    int t = step * 1000;
    j.x("user_annotation", "ProfilerStep#" + std::to_string(step + 1), 100, 1, t, 1000);
    j.x("user_annotation", "encoder", 100, 1, t + 10, 390);
    j.x("cpu_op", "aten::linear", 100, 1, t + 20, 180);
    j.x(runtime_cat, call, 100, 1, t + 30, 20, corr(c));
    j.x(device_cat, "fc-dtype_Float", dev_pid, 408, t + 60, 100, R"({"correlation": )" + std::to_string(c++) + R"(, "stream": 102})");
    j.x("cpu_op", "aten::relu", 100, 1, t + 250, 100);
    j.x(runtime_cat, call, 100, 1, t + 260, 20, corr(c));
    j.x(device_cat, "relu-dtype_Float", dev_pid, 408, t + 300, 40, R"({"correlation": )" + std::to_string(c++) + R"(, "stream": 102})");
    j.x("user_annotation", "head", 100, 1, t + 450, 350);
    j.x("cpu_op", "aten::linear", 100, 1, t + 460, 240);
    j.x(runtime_cat, call, 100, 1, t + 470, 20, corr(c));
    j.x(device_cat, "fc-dtype_Float", dev_pid, 408, t + 500, 150, R"({"correlation": )" + std::to_string(c++) + R"(, "stream": 102})");
  }
  return j;
}

const DeviceUtil* device_util(const Analyses& r, int32_t device) {
  for (const DeviceUtil& u : r.utilization)
    if (u.device == device && u.stream < 0) return &u;
  return nullptr;
}

}  // namespace

TEST_CASE("MTIA: ccp events on an 'MTIA 3' process are device work, linked to their runtime calls") {
  Json j = two_steps("mtia_runtime", "runFunction - job_prep_and_submit_for_execution", "mtia_ccp_events", 9);
  j.process(9, "MTIA 3", "MTIA 3");
  auto m = j.load();
  EventId op = find_event(*m, "fc-dtype_Float");
  REQUIRE(op != kNoEvent);
  // The trace's own spelling stays; analyses see a kernel launched by a runtime call.
  CHECK(m->category_names[m->ev.cat[op]] == "mtia_ccp_events");
  CHECK(m->ev.category(op) == Cat::Kernel);
  EventId launch = m->launch_of(op);
  REQUIRE(launch != kNoEvent);
  CHECK(m->ev.category(launch) == Cat::CudaRuntime);
  CHECK(m->name_of(launch) == "runFunction - job_prep_and_submit_for_execution");
  CHECK(m->gpu_op_of(launch) == op);
  const Track& tr = m->tracks[m->track_of(op)];
  CHECK(tr.kind == TrackKind::GpuStream);
  CHECK(tr.stream == 102);
  CHECK(m->processes[tr.process].device == 3);
  CHECK(m->stats.gpu_ops_linked == 6);

  Annotation a = annotate(*m);
  check_tree(a.tree);
  REQUIRE(a.iterations.size() == 2);
  const DeviceUtil* u = device_util(a.analyses, 3);
  REQUIRE(u);
  CHECK(u->ops == 6);
  CHECK(u->busy == 2 * (100 + 40 + 150) * 1000);  // µs → ns
  CHECK(u->elapsed == 2000 * 1000);
  // Gaps between the device's ops, with causes.
  CHECK(a.analyses.idle.count > 0);
  CHECK(a.analyses.idle.total == u->elapsed - u->busy);
  // The ops sit under their layers and phases.
  CHECK(a.gpu_ops == 6);
  CHECK(a.gpu_ops_annotated == 6);
  int encoders = 0;
  for (NodeId n = 0; n < a.tree.size(); ++n) {
    if (a.tree.kind[n] == NodeKind::Phase) CHECK(a.tree.kernels[n] == 3);
    if (a.tree.kind[n] != NodeKind::Layer || a.tree.name_of(n) != "encoder") continue;
    ++encoders;
    CHECK(a.tree.kernels[n] == 2);
    CHECK(a.tree.gpu_busy[n] == (100 + 40) * 1000);
  }
  CHECK(encoders == 2);
  std::string text = summary_text(*m, a);
  CHECK(text.find("GPU 3:") != std::string::npos);
  CHECK(text.find("no GPU activity") == std::string::npos);
}

TEST_CASE("XPU and PrivateUse1 backends: their runtime calls launch kernels and copies on an 'XPU 1' device") {
  Json j;
  j.process(1, "python", "XPU 1");
  j.x("user_annotation", "ProfilerStep#1", 100, 1, 0, 1000);
  j.x("cpu_op", "aten::mm", 100, 1, 10, 100);
  j.x("xpu_runtime", "urEnqueueKernelLaunch", 100, 1, 20, 10, corr(1));
  j.x("kernel", "gemm_kernel", 1, 5, 40, 200, R"({"correlation": 1, "device": 1})");
  j.x("cpu_op", "aten::copy_", 100, 1, 300, 100);
  j.x("privateuse1_runtime", "memcpyAsync", 100, 1, 310, 10, corr(2));
  j.x("xpu_driver", "zeCommandListAppendBarrier", 100, 1, 330, 5, corr(3));
  j.x("gpu_memcpy", "Memcpy HtoD", 1, 5, 400, 50, R"({"correlation": 2, "device": 1})");
  auto m = j.load();
  EventId k = find_event(*m, "gemm_kernel"), cp = find_event(*m, "Memcpy HtoD");
  EventId driver = find_event(*m, "zeCommandListAppendBarrier");
  REQUIRE(k != kNoEvent);
  REQUIRE(cp != kNoEvent);
  CHECK(m->name_of(m->launch_of(k)) == "urEnqueueKernelLaunch");
  CHECK(m->name_of(m->launch_of(cp)) == "memcpyAsync");
  CHECK(m->ev.category(m->launch_of(cp)) == Cat::CudaRuntime);
  CHECK(m->ev.category(driver) == Cat::CudaDriver);
  CHECK(m->processes[m->tracks[m->track_of(k)].process].device == 1);
  // info lists the trace's own spellings.
  std::string info = info_text(*m);
  CHECK(info.find("xpu_runtime=1") != std::string::npos);
  CHECK(info.find("privateuse1_runtime=1") != std::string::npos);

  Annotation a = annotate(*m);
  const DeviceUtil* u = device_util(a.analyses, 1);
  REQUIRE(u);
  CHECK(u->ops == 2);
  CHECK(u->busy == 250 * 1000);
}

TEST_CASE("device numbers from process labels and names") {
  CHECK(device_number_of_label("GPU 0") == 0);
  CHECK(device_number_of_label("MTIA 9") == 9);
  CHECK(device_number_of_label("XPU 12") == 12);
  CHECK(device_number_of_label("CPU") == -1);
  CHECK(device_number_of_label("CPU 3") == -1);
  CHECK(device_number_of_label("python3.8") == -1);
  CHECK(device_number_of_label("GPU") == -1);
  CHECK(device_number_of_label("") == -1);
  CHECK(device_category_kind("mtia_ccp_events") == Cat::Kernel);
  CHECK(device_category_kind("hpu_op") == Cat::Kernel);
  CHECK(device_category_kind("privateuse1_driver") == Cat::CudaDriver);
  CHECK(device_category_kind("mlu_memset") == Cat::GpuMemset);
  CHECK(device_category_kind("ac2g") == Cat::Other);
}

namespace {

const char* kFfma = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum";
const char* kFadd = "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum";
const char* kFmul = "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum";
const char* kHfma = "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum";
const char* kDadd = "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum";

std::string counter(const char* name, double v) { return "\"" + std::string(name) + "\": " + std::to_string(v); }

// One step: `layer1` (aten::mm) and `layer2` (aten::linear), one cudaLaunchKernel each; the range
// profiler's ranges come later on GPU 0 with made-up, evenly split times, as Kineto writes them.
Json range_trace(int ranges) {
  Json j;
  j.process(0, "python", "GPU 0");
  j.x("user_annotation", "ProfilerStep#1", 100, 1, 0, 1000);
  j.x("user_annotation", "layer1", 100, 1, 10, 300);
  j.x("cpu_op", "aten::mm", 100, 1, 20, 100);
  j.x("cuda_runtime", "cudaLaunchKernel", 100, 1, 30, 10, corr(5));
  j.x("user_annotation", "layer2", 100, 1, 400, 300);
  j.x("cpu_op", "aten::linear", 100, 1, 410, 100);
  j.x("cuda_runtime", "cudaLaunchKernel", 100, 1, 420, 10, corr(6));
  const std::string first = "{" + counter(kFfma, 1000) + ", " + counter(kFadd, 10) + ", " + counter(kFmul, 20) + ", " +
                            counter(kHfma, 5) + ", " + counter(kDadd, 1) + ", \"gpu__time_duration.sum\": 2000}";
  const std::string second = "{" + counter(kFfma, 100) + ", " + counter(kFmul, 3) + "}";
  j.x("cuda_profiler_range", "gemm", 0, 0, 2000, 500, first);
  j.x("cuda_profiler_range", "add_kernel", 0, 0, 2500, 500, second);
  if (ranges > 2) j.x("cuda_profiler_range", "add_kernel", 0, 0, 3000, 500, second);
  return j;
}

const FlopStat* stat(const std::vector<FlopStat>& v, std::string_view name) {
  for (const FlopStat& s : v)
    if (s.name == name) return &s;
  return nullptr;
}

}  // namespace

TEST_CASE("range profiler: FLOPs = Σ add + mul + 2·fma per precision, FLOP/s only from the duration counter") {
  ProfilerRangeCounters c = profiler_range_counters_json(
      "{\"args\": {" + counter(kFfma, 1000) + ", " + counter(kFadd, 10) + ", \"gpu__time_duration.sum\": 400}}");
  CHECK(c.has_flop_counters);
  CHECK(c.flops == 2010);
  CHECK(c.measured == 400);
  ProfilerRangeCounters none = profiler_range_counters_json(R"({"args": {"other": 5, "gpu__time_duration.sum": "x"}})");
  CHECK_FALSE(none.has_flop_counters);
  CHECK(none.flops == 0);
  CHECK(none.measured == -1);
  CHECK(profiler_range_counters_json("{\"" + std::string(kFfma)).flops == 0);  // cut short: nothing read

  auto m = range_trace(2).load();
  EventId gemm = find_event(*m, "gemm");
  REQUIRE(gemm != kNoEvent);
  CHECK(m->ev.category(gemm) == Cat::ProfilerRange);
  CHECK(m->tracks[m->track_of(gemm)].kind == TrackKind::GpuStream);
  // No correlation id: paired with the launches in order (the range points at its launch).
  REQUIRE(m->host_side_of(gemm) != kNoEvent);
  CHECK(m->ev.start[m->host_side_of(gemm)] == 30 * 1000);

  Annotation a = annotate(*m);
  const FlopFigures& f = a.analyses.flops;
  CHECK(f.total.ranges == 2);
  CHECK(f.with_counters == 2);
  CHECK(f.total.flops == 2041 + 203);  // 2·1000 + 10 + 20 + 2·5 + 1; 2·100 + 3
  CHECK(f.total.timed == 1);
  CHECK(f.total.measured == 2000);
  const FlopStat* g = stat(f.kernels, "gemm");
  const FlopStat* add = stat(f.kernels, "add_kernel");
  REQUIRE(g);
  REQUIRE(add);
  CHECK(g->flop_per_s() == doctest::Approx(2041 / 2e-6));
  CHECK(add->timed == 0);
  CHECK(add->flop_per_s() == 0);
  CHECK(f.attributed == 2);
  const FlopStat* l1 = stat(f.layers, "Forward/layer1");
  const FlopStat* l2 = stat(f.layers, "Forward/layer2");
  REQUIRE(l1);
  REQUIRE(l2);
  CHECK(l1->flops == 2041);
  CHECK(l2->flops == 203);
  // Made-up times count in no utilization, and the summary says why.
  CHECK(a.analyses.utilization.empty());
  CHECK(a.analyses.kernels.empty());
  bool said = false;
  for (const std::string& n : a.notes) said |= n.find("range profiler") != std::string::npos;
  CHECK(said);
  std::string json = summary_json(*m, a);
  CHECK(json.find(R"("flops":{"ranges":2,"flops":2244)") != std::string::npos);
  CHECK(json.find(R"("name":"add_kernel","ranges":1,"flops":203,"timed_ranges":0,"timed_flops":0,"measured_ns":0,"flop_per_s":null)") !=
        std::string::npos);
  // A layer's figures (the details panel, --item) carry its FLOPs.
  NodeId layer1 = find_node(a.tree, a.iterations[0].name + "/Forward/layer1");
  if (layer1 == kNoNode)
    for (NodeId n = 0; n < a.tree.size(); ++n)
      if (a.tree.kind[n] == NodeKind::Layer && a.tree.name_of(n) == "layer1") layer1 = n;
  REQUIRE(layer1 != kNoNode);
  WorkFigures w = node_work(*m, a, layer1);
  CHECK(w.flops.ranges == 1);
  CHECK(w.flops.flops == 2041);
  CHECK(w.gpu_ops.empty());
  CHECK(work_text("layer1", w).find("FLOPs (range profiler): 2.04 kFLOP in 1 range, 1.02 GFLOP/s") != std::string::npos);
  CHECK(event_work(*m, a, gemm).flops.flops == 2041);
}

TEST_CASE("range profiler: ranges that do not pair with the launches stay out of layers, and the summary says so") {
  auto m = range_trace(3).load();
  for (EventId e = 0; e < m->ev.size(); ++e)
    if (m->ev.category(e) == Cat::ProfilerRange) CHECK(m->host_side_of(e) == kNoEvent);
  Annotation a = annotate(*m);
  CHECK(a.analyses.flops.total.ranges == 3);
  CHECK(a.analyses.flops.attributed == 0);
  CHECK(a.analyses.flops.layers.empty());
  CHECK(a.analyses.flops.total.flops == 2041 + 2 * 203);
  bool said = false;
  for (const std::string& n : a.notes) said |= n.find("3 of 3 profiler ranges are in no layer") != std::string::npos;
  CHECK(said);
}
