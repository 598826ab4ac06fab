// torch_npu (Huawei Ascend) traces: string times, the "Ascend Hardware" device process, its
// derived "Overlap Analysis" process, the "CANN" runtime layer and the launch flows, from small
// hand-written traces shaped like the profiler's output, and the real one when present.
#include "core/annotate/annotation.h"
#include "core/trace_info.h"
#include "test_util.h"

#include <doctest/doctest.h>

#include <string>

using namespace strata;
using namespace strata::test;

namespace {

std::string meta(const char* what, int64_t pid, int64_t tid, const char* key, const char* value) {
  return std::string(R"({"ph":"M","name":")") + what + R"(","pid":)" + std::to_string(pid) + R"(,"tid":)" +
         std::to_string(tid) + R"(,"args":{")" + key + R"(":")" + value + "\"}},\n";
}
std::string process(int64_t pid, const char* name, const char* labels) {
  return meta("process_name", pid, 0, "name", name) + meta("process_labels", pid, 0, "labels", labels);
}
std::string thread(int64_t pid, int64_t tid, const char* name) { return meta("thread_name", pid, tid, "name", name); }

// An X event as torch_npu writes it: `ts` a string with sub-microsecond digits; no category
// when `cat` is null.
std::string x(const char* name, int64_t pid, int64_t tid, const char* ts, double dur, const char* cat = nullptr) {
  std::string s = std::string(R"({"ph":"X","name":")") + name + R"(","pid":)" + std::to_string(pid) + R"(,"tid":)" +
                  std::to_string(tid) + R"(,"ts":")" + ts + R"(","dur":)" + std::to_string(dur);
  if (cat) s += std::string(R"(,"cat":")") + cat + "\"";
  return s + "},\n";
}
std::string flow(char ph, const char* cat, const char* id, int64_t pid, int64_t tid, const char* ts, bool bp_e = true) {
  return std::string(R"({"ph":")") + ph + R"(","cat":")" + cat + R"(","name":")" + cat + R"(","id":)" + id +
         R"(,"pid":)" + std::to_string(pid) + R"(,"tid":)" + std::to_string(tid) + R"(,"ts":")" + ts + "\"" +
         (bp_e ? R"(,"bp":"e")" : "") + "},\n";
}
std::unique_ptr<TraceModel> load_array(std::string events) {
  events += R"({"ph":"i","name":"end","pid":10,"tid":11,"ts":"0.5","s":"t"}])";
  return must_load("[" + events);
}

constexpr int64_t kPython = 10, kMain = 11, kQueue = 12, kCann = 1002, kNpu = 800, kOverlap = 1100;

// One op that launches one task through torch_npu's task queue: aten::zero_ → aclnnInplaceZero
// (the async_npu flow starts there) → Enqueue (async_task_queue to the queue's thread) →
// Dequeue@aclnnInplaceZero → AscendCL@aclnnInplaceZero (HostToDevice) → the task on Stream 3.
std::string queued_launch(bool async_npu, bool host_to_device) {
  std::string j = process(kPython, "Python", "CPU") + thread(kPython, kMain, "Thread 11") + thread(kPython, kQueue, "Thread 12");
  j += process(kCann, "CANN", "CPU") + thread(kCann, kMain, "Thread 11") + thread(kCann, kQueue, "Thread 12");
  j += process(kNpu, "Ascend Hardware", "NPU") + thread(kNpu, 3, "Stream 3");
  j += x("ProfilerStep#1", kPython, kMain, "100.000", 400, "cpu_op");
  j += x("aten::zero_", kPython, kMain, "110.000", 60, "cpu_op");
  j += x("aclnnInplaceZero", kPython, kMain, "112.500", 40, "cpu_op");
  j += x("AscendCL@aclnnInplaceZeroGetWorkspaceSize", kCann, kMain, "113.000", 2);
  j += x("Enqueue", kPython, kMain, "120.000", 10, "enqueue");
  j += flow('s', "async_task_queue", "7", kPython, kMain, "120.000");
  j += x("Dequeue@aclnnInplaceZero", kPython, kQueue, "140.000", 30, "dequeue");
  j += flow('f', "async_task_queue", "7", kPython, kQueue, "140.000");
  j += x("AscendCL@aclnnInplaceZero", kCann, kQueue, "145.000", 10);
  if (host_to_device) j += flow('s', "HostToDevice", "\"38654705663\"", kCann, kQueue, "146.000", false);
  if (async_npu) j += flow('s', "async_npu", "1704161511422904204", kPython, kMain, "112.500");
  j += x("aclnnInplaceZero_ZerosLikeAiCore_ZerosLike", kNpu, 3, "200.000", 5);
  if (host_to_device) j += flow('f', "HostToDevice", "\"38654705663\"", kNpu, 3, "200.000");
  if (async_npu) j += flow('f', "async_npu", "1704161511422904204", kNpu, 3, "200.000");
  return j;
}

const DeviceUtil* device_util(const Analyses& r, int32_t device) {
  for (const DeviceUtil& u : r.utilization)
    if (u.device == device && u.stream < 0) return &u;
  return nullptr;
}

}  // namespace

TEST_CASE("npu: ts and dur written as strings are read exactly, rounded as numbers are") {
  auto m = must_load(R"([
    {"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":"1704161511420306.491","dur":"13.08"},
    {"ph":"X","cat":"cpu_op","name":"b","pid":1,"tid":2,"ts":"12.3455","dur":"0.0005"},
    {"ph":"X","cat":"cpu_op","name":"c","pid":1,"tid":3,"ts":12.3455,"dur":0.0005},
    {"ph":"X","cat":"cpu_op","name":"d","pid":1,"tid":4,"ts":"-2.5","dur":"1e1"}])");
  REQUIRE(m->ev.size() == 4);
  CHECK(m->warning_count == 0);
  EventId a = find_event(*m, "a"), b = find_event(*m, "b"), c = find_event(*m, "c"), d = find_event(*m, "d");
  CHECK(m->ev.start[a] == 1704161511420306491);
  CHECK(m->ev.dur[a] == 13080);
  CHECK(m->ev.start[b] == m->ev.start[c]);
  CHECK(m->ev.start[b] == 12346);
  CHECK(m->ev.dur[b] == m->ev.dur[c]);
  CHECK(m->ev.dur[b] == 1);
  CHECK(m->ev.start[d] == -2500);
  CHECK(m->ev.dur[d] == 10000);
  CHECK(m->time_begin == -2500);
}

TEST_CASE("npu: strings that hold no number still warn, naming the byte offset") {
  for (const char* bad : {R"("abc")", R"("")", R"(" 12")", R"("12 ")", R"("1\u0032")", R"("12.5x")", R"("1e")"}) {
    CAPTURE(bad);
    std::string good = R"({"ph":"X","cat":"cpu_op","name":"good","pid":1,"tid":1,"ts":1,"dur":1})";
    std::string events = "[" + good + R"(, {"ph":"X","cat":"cpu_op","name":"bad","pid":1,"tid":1,"ts":)" + bad +
                         R"(,"dur":1}, {"ph":"X","cat":"cpu_op","name":"bad dur","pid":1,"tid":1,"ts":5,"dur":)" + bad + "}]";
    auto m = must_load(events);
    CHECK(m->ev.size() == 1);
    CHECK(m->warning_count == 2);
    REQUIRE(m->warnings.size() == 2);
    CHECK(m->warnings[0].find("\"ts\" is not a finite number") != std::string::npos);
    CHECK(m->warnings[0].find("at byte " + std::to_string(events.find(R"({"ph":"X","cat":"cpu_op","name":"bad")"))) !=
          std::string::npos);
    CHECK(m->warnings[1].find("\"dur\" is not a finite number") != std::string::npos);
    CHECK(m->warnings[1].find("at byte") != std::string::npos);
  }
}

TEST_CASE("npu: an accelerator-labelled process's Stream threads hold device tasks, numbered as a device") {
  std::string j = process(kNpu, "Ascend Hardware", "NPU") + thread(kNpu, 3, "Stream 3") + thread(kNpu, 9, "Stream 5");
  j += process(kNpu + 1, "Ascend Hardware", "NPU") + thread(kNpu + 1, 2, "Stream 2");
  j += process(7, "GPU 0", "GPU 0");
  j += x("aclnnMm_MatMulV2_MatMulV2", kNpu, 3, "100.000", 10);
  j += x("MEMCPY_ASYNC", kNpu, 3, "120.000", 5);
  j += x("trans_TransData_3_MemSet", kNpu, 9, "130.000", 1);
  j += x("aclnnAdd_AddAiCore_Add", kNpu + 1, 2, "100.000", 3);
  auto m = load_array(j);
  EventId mm = find_event(*m, "aclnnMm_MatMulV2_MatMulV2"), copy = find_event(*m, "MEMCPY_ASYNC"),
          set = find_event(*m, "trans_TransData_3_MemSet"), add = find_event(*m, "aclnnAdd_AddAiCore_Add");
  CHECK(m->ev.category(mm) == Cat::Kernel);
  CHECK(m->ev.category(copy) == Cat::GpuMemcpy);
  CHECK(m->ev.category(set) == Cat::GpuMemset);
  CHECK(m->ev.category(add) == Cat::Kernel);
  CHECK(m->stats.gpu_ops == 4);
  // Counted under the categories they were given.
  CHECK(m->stats.per_category[size_t(Cat::Kernel)] == 2);
  CHECK(m->stats.per_category[size_t(Cat::GpuMemcpy)] == 1);
  CHECK(m->stats.per_category[size_t(Cat::GpuMemset)] == 1);
  const Track& s3 = m->tracks[m->track_of(mm)];
  CHECK(s3.kind == TrackKind::GpuStream);
  CHECK(s3.stream == 3);
  CHECK(m->tracks[m->track_of(set)].stream == 5);  // by its name, not its tid
  CHECK(m->tracks[m->track_of(set)].kind == TrackKind::GpuStream);
  // "NPU" names no number: the first free ones, after the labelled GPU 0.
  CHECK(m->processes[s3.process].device == 1);
  CHECK(m->processes[m->tracks[m->track_of(add)].process].device == 2);
  CHECK(info_text(*m).find("NPU 1 (pid 800) Ascend Hardware") != std::string::npos);
}

TEST_CASE("npu: the Overlap Analysis process is shown, but is no device work") {
  std::string j = process(kNpu, "Ascend Hardware", "NPU") + thread(kNpu, 3, "Stream 3");
  j += process(kOverlap, "Overlap Analysis", "NPU") + thread(kOverlap, 0, "Computing") + thread(kOverlap, 1, "Communication") +
       thread(kOverlap, 2, "Communication(Not Overlapped)") + thread(kOverlap, 3, "Free");
  j += process(kPython, "Python", "CPU") + thread(kPython, kMain, "Thread 11");
  j += x("ProfilerStep#1", kPython, kMain, "90.000", 200, "cpu_op");
  j += x("aten::mm", kPython, kMain, "95.000", 10, "cpu_op");
  j += x("aclnnMm_MatMulV2", kNpu, 3, "100.000", 10);
  j += x("aclnnAdd_Add", kNpu, 3, "150.000", 20);
  j += x("Computing", kOverlap, 0, "100.000", 10);
  j += x("Computing", kOverlap, 0, "150.000", 20);
  j += x("Free", kOverlap, 3, "110.000", 40);
  auto m = load_array(j);
  CHECK(m->stats.gpu_ops == 2);
  EventId computing = find_event(*m, "Computing"), free = find_event(*m, "Free");
  CHECK(m->ev.category(computing) == Cat::None);
  const Track& t = m->tracks[m->track_of(computing)];
  CHECK(t.kind == TrackKind::Other);
  CHECK(m->tracks[m->track_of(free)].kind == TrackKind::Other);
  CHECK(m->processes[t.process].device == -1);
  CHECK(m->ev.size() == 8);  // still loaded, still shown (and the closing instant)

  Annotation a = annotate(*m);
  const DeviceUtil* u = device_util(a.analyses, 0);
  REQUIRE(u);
  CHECK(u->ops == 2);
  CHECK(u->busy == 30 * 1000);  // the hardware's tasks only, not Computing again
  for (const DeviceUtil& d : a.analyses.utilization) CHECK(d.device == 0);
}

TEST_CASE("npu: async_npu, HostToDevice and the task queue link each task to the op's launch") {
  for (auto [async_npu, host_to_device] : {std::pair(true, true), std::pair(true, false), std::pair(false, true)}) {
    CAPTURE(async_npu);
    CAPTURE(host_to_device);
    auto m = load_array(queued_launch(async_npu, host_to_device));
    EventId task = find_event(*m, "aclnnInplaceZero_ZerosLikeAiCore_ZerosLike"), enqueue = find_event(*m, "Enqueue"),
            call = find_event(*m, "AscendCL@aclnnInplaceZero"), dequeue = find_event(*m, "Dequeue@aclnnInplaceZero"),
            op = find_event(*m, "aclnnInplaceZero");
    REQUIRE(task != kNoEvent);
    CHECK(m->ev.category(task) == Cat::Kernel);
    // The launch as the op's thread made it: the enqueue, inside the op.
    CHECK(m->ev.category(enqueue) == Cat::CudaRuntime);
    CHECK(m->launch_of(task) == enqueue);
    CHECK(m->gpu_op_of(enqueue) == task);
    CHECK(m->host_side_of(task) == enqueue);
    CHECK(m->parent_of(enqueue) == op);
    CHECK(m->stats.gpu_ops_linked == 1);
    // The runtime call on the queue's thread made it too.
    if (host_to_device) CHECK(m->gpu_op_of(call) == task);
    // CANN's calls are runtime calls on the Python process's threads, nested in what made them.
    CHECK(m->ev.category(call) == Cat::CudaRuntime);
    CHECK(m->category_names[m->ev.cat[call]] == "privateuse1_runtime");
    CHECK(m->track_of(call) == find_track(*m, kPython, kQueue));
    CHECK(m->parent_of(call) == dequeue);
    CHECK(m->parent_of(find_event(*m, "AscendCL@aclnnInplaceZeroGetWorkspaceSize")) == op);
    CHECK(m->tracks[m->track_of(call)].kind == TrackKind::CpuThread);
    uint32_t cann = find_track(*m, kCann, kQueue);
    CHECK((cann == kNoTrack || m->tracks[cann].events.empty()));
    // ProfilerStep#1 is a cpu_op here.
    StepInfo steps = profiler_steps(*m);
    REQUIRE(steps.steps.size() == 1);
    CHECK(m->ev.dur[steps.steps[0]] == 400 * 1000);
    CHECK(m->warning_count == 0);
  }
}

TEST_CASE("npu: with the task queue off, the runtime call under the op is the launch; ends before starts pair") {
  std::string j = process(kPython, "Python", "CPU") + thread(kPython, kMain, "Thread 11");
  j += process(kCann, "CANN", "CPU") + thread(kCann, kMain, "Thread 11");
  j += process(kNpu, "Ascend Hardware", "NPU") + thread(kNpu, 3, "Stream 3");
  j += x("aclnnMm", kPython, kMain, "100.000", 50, "cpu_op");
  j += x("AscendCL@aclnnMm", kCann, kMain, "110.000", 20);
  j += flow('s', "HostToDevice", "5", kCann, kMain, "112.000", false);
  j += flow('s', "async_npu", "6", kPython, kMain, "100.000");
  // The device's clock runs behind the host's here: the flows end before they start.
  j += x("aclnnMm_MatMulV2", kNpu, 3, "108.000", 10);
  j += flow('f', "HostToDevice", "5", kNpu, 3, "108.000");
  j += flow('f', "async_npu", "6", kNpu, 3, "108.000");
  auto m = load_array(j);
  CHECK(m->stats.flows_resolved == 2);
  CHECK(m->stats.flow_events_unmatched == 0);
  EventId task = find_event(*m, "aclnnMm_MatMulV2"), call = find_event(*m, "AscendCL@aclnnMm");
  CHECK(m->launch_of(task) == call);
  CHECK(m->gpu_op_of(call) == task);
  CHECK(m->parent_of(call) == find_event(*m, "aclnnMm"));
}

TEST_CASE("npu: AscendCL synchronizations and synchronous copies are host waits") {
  CHECK(host_wait_of("AscendCL@aclrtSynchronizeStream") == HostWait::Stream);
  CHECK(host_wait_of("AscendCL@aclrtSynchronizeStreamWithTimeout") == HostWait::Stream);
  CHECK(host_wait_of("AscendCL@aclrtSynchronizeDevice") == HostWait::Device);
  CHECK(host_wait_of("aclrtSynchronizeDeviceWithTimeout") == HostWait::Device);
  CHECK(host_wait_of("AscendCL@aclrtSynchronizeEvent") == HostWait::Event);
  CHECK(host_wait_of("AscendCL@aclrtMemcpy") == HostWait::Copy);
  CHECK(host_wait_of("AscendCL@aclrtStreamWaitEvent") == HostWait::StreamWaitEvent);
  CHECK(host_wait_of("AscendCL@aclrtMemcpyAsync") == HostWait::None);
  CHECK(host_wait_of("AscendCL@aclnnInplaceAdd") == HostWait::None);
  CHECK(host_wait_of("AscendCL@aclrtSynchronizeStreamFoo") == HostWait::None);
  CHECK(host_wait_of("Synchronize") == HostWait::None);
  // CUDA and HIP as before.
  CHECK(host_wait_of("cudaDeviceSynchronize") == HostWait::Device);
  CHECK(host_wait_of("cuCtxSynchronize") == HostWait::Device);
  CHECK(host_wait_of("hipStreamSynchronize") == HostWait::Stream);
  CHECK(host_wait_of("cudaEventSynchronize") == HostWait::Event);
  CHECK(host_wait_of("cudaMemcpy") == HostWait::Copy);
  CHECK(host_wait_of("cudaMemcpyAsync") == HostWait::None);
  CHECK(host_wait_of("cudaStreamWaitEvent") == HostWait::StreamWaitEvent);
  CHECK(host_wait_of("cudaLaunchKernel") == HostWait::None);

  // In a trace: CANN's sync call on the main thread, nested in the op that waited.
  std::string j = process(kPython, "Python", "CPU") + process(kCann, "CANN", "CPU");
  j += x("aten::item", kPython, kMain, "100.000", 50, "cpu_op");
  j += x("AscendCL@aclrtSynchronizeStream", kCann, kMain, "105.000", 40);
  auto m = load_array(j);
  EventId sync = find_event(*m, "AscendCL@aclrtSynchronizeStream");
  CHECK(is_cuda_call_cat(m->ev.category(sync)));
  CHECK(host_wait_of(m->name_of(sync)) == HostWait::Stream);
  CHECK(m->parent_of(sync) == find_event(*m, "aten::item"));
}

TEST_CASE("npu: device words of labels, task kinds, runtime API names") {
  CHECK(device_word_of_label("NPU") == "NPU");
  CHECK(device_word_of_label("GPU 0") == "GPU");
  CHECK(device_word_of_label("MTIA 9") == "MTIA");
  CHECK(device_word_of_label("XPU1") == "XPU");
  CHECK(device_word_of_label("CPU").empty());
  CHECK(device_word_of_label("").empty());
  CHECK(device_word_of_label("Python").empty());
  CHECK(device_word_of_label("NPU x").empty());
  CHECK(device_number_of_label("NPU") == -1);
  CHECK(device_task_kind("MEMCPY_ASYNC") == Cat::GpuMemcpy);
  CHECK(device_task_kind("trans_TransData_3_MemSet") == Cat::GpuMemset);
  CHECK(device_task_kind("aclnnInplaceCopy_ViewCopy") == Cat::Kernel);
  CHECK(device_task_kind("MemcpyKernel") == Cat::Kernel);
  CHECK(is_runtime_api_call_name("AscendCL@aclnnAdd"));
  CHECK_FALSE(is_runtime_api_call_name("AscendCL@"));
  CHECK_FALSE(is_runtime_api_call_name("Dequeue@aclnnAdd"));
  CHECK(device_category_kind("enqueue") == Cat::CudaRuntime);
  CHECK(device_category_kind("dequeue") == Cat::Other);
}

TEST_CASE("npu: the real Ascend trace is a device trace" * doctest::timeout(60)) {
  STRATA_REQUIRE_TRACE(p, "mstt-mlp-train-ascend-npu.json.gz");
  LoadResult r = load_trace(p);
  REQUIRE(r.model);
  const TraceModel& m = *r.model;
  CHECK(m.warning_count == 0);
  CHECK(m.time_begin == 1704161511420289011);
  CHECK(m.stats.gpu_ops == 276);
  // Every task with a launch flow (all but the two copies of synchronous aclrtMemcpy calls).
  CHECK(m.stats.gpu_ops_linked >= 274);
  uint64_t both_ways = 0, streams = 0, views = 0;
  for (EventId e = 0; e < m.ev.size(); ++e)
    if (EventId l = m.launch_of(e); l != kNoEvent) both_ways += is_launch_cat(m.ev.category(l)) && m.gpu_op_of(l) != kNoEvent;
  CHECK(both_ways >= 274);
  for (const Track& t : m.tracks) {
    if (t.events.empty()) continue;
    if (t.kind == TrackKind::GpuStream) {
      ++streams;
      CHECK(t.stream == 3);
      CHECK(m.processes[t.process].device == 0);
    }
    views += t.kind == TrackKind::Other;
  }
  CHECK(streams == 1);
  CHECK(views == 2);  // Overlap Analysis: Computing, Free
  CHECK(profiler_steps(m).steps.size() == 1);
  Annotation a = annotate(m);
  CHECK(a.iterations.size() == 1);
  const DeviceUtil* u = device_util(a.analyses, 0);
  REQUIRE(u);
  CHECK(u->ops == 276);
  CHECK(a.gpu_ops_annotated * 10 >= a.gpu_ops * 9);
}
