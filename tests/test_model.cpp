// Small hand-written traces through load_trace_bytes: nesting, tracks, metadata, links.
#include "core/trace_info.h"
#include "test_util.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <string>

using namespace strata;
using namespace strata::test;

namespace {

std::string trace(const std::string& events) { return R"({"traceEvents":[)" + events + "]}"; }

std::string x(const char* name, double ts, double dur, int tid = 1, const char* cat = "cpu_op", const char* args = "{}") {
  char buf[512];
  std::snprintf(buf, sizeof buf, R"({"ph":"X","cat":"%s","name":"%s","pid":1,"tid":%d,"ts":%.3f,"dur":%.3f,"args":%s})",
                cat, name, tid, ts, dur, args);
  return buf;
}

}  // namespace

TEST_CASE("nesting: depths, parent_of, event_at, track_of") {
  auto m = must_load(trace(x("A", 0, 100) + "," + x("B", 10, 40) + "," + x("C", 20, 10) + "," + x("D", 60, 30) + "," +
                           x("E", 200, 5)));
  REQUIRE(m->ev.size() == 5);
  EventId a = find_event(*m, "A"), b = find_event(*m, "B"), c = find_event(*m, "C"), d = find_event(*m, "D"),
          e = find_event(*m, "E");
  CHECK(m->ev.depth[a] == 0);
  CHECK(m->ev.depth[b] == 1);
  CHECK(m->ev.depth[c] == 2);
  CHECK(m->ev.depth[d] == 1);
  CHECK(m->ev.depth[e] == 0);
  CHECK(m->parent_of(a) == kNoEvent);
  CHECK(m->parent_of(b) == a);
  CHECK(m->parent_of(c) == b);
  CHECK(m->parent_of(d) == a);
  uint32_t t = find_track(*m, 1, 1);
  REQUIRE(t != kNoTrack);
  CHECK(m->track_of(c) == t);
  CHECK(m->tracks[t].kind == TrackKind::CpuThread);
  REQUIRE(m->tracks[t].levels.size() == 3);
  CHECK(m->tracks[t].levels[1].size() == 2);
  CHECK(m->event_at(t, 25'000) == c);
  CHECK(m->event_at(t, 55'000) == a);
  CHECK(m->event_at(t, 100'000) == a);  // the end is inclusive
  CHECK(m->event_at(t, 150'000) == kNoEvent);
  CHECK(m->ev.start[c] == 20'000);
  CHECK(m->ev.dur[c] == 10'000);
  CHECK(m->time_begin == 0);
  CHECK(m->time_end == 205'000);
  CHECK(m->warning_count == 0);
}

TEST_CASE("partial overlaps go to an '(overlapping)' track and are counted") {
  auto m = load_json(trace(x("A", 0, 100) + "," + x("B", 50, 100) + "," + x("C", 60, 10))).model;
  REQUIRE(m);
  CHECK(m->stats.overlaps == 1);
  CHECK(m->warning_count == 1);
  uint32_t t = find_track(*m, 1, 1);
  REQUIRE(t != kNoTrack);
  uint32_t o = m->tracks[t].overflow;
  REQUIRE(o != kNoTrack);
  CHECK(m->tracks[o].overflow_of == t);
  CHECK(m->strings.view(m->tracks[o].name).ends_with("(overlapping)"));
  EventId b = find_event(*m, "B");
  CHECK(m->track_of(b) == o);
  CHECK(m->ev.depth[b] == 0);
  CHECK(m->parent_of(find_event(*m, "C")) == find_event(*m, "A"));
}

TEST_CASE("equal-start events nest longest first, whatever the file order") {
  auto m = must_load(trace(x("short", 0, 10) + "," + x("long", 0, 50) + "," + x("same", 0, 50)));
  EventId s = find_event(*m, "short"), l = find_event(*m, "long"), same = find_event(*m, "same");
  CHECK(m->ev.depth[l] == 0);
  CHECK(m->ev.depth[same] == 1);  // equal extent: file order decides
  CHECK(m->ev.depth[s] == 2);
  CHECK(m->parent_of(s) == same);
  CHECK(m->stats.overlaps == 0);
}

TEST_CASE("a thread's events in any file order load as if sorted") {
  // Parents with two children each, some pairs with equal starts.
  std::vector<std::string> sorted;
  for (int i = 0; i < 400; ++i) {
    double t = i * 100.0;
    sorted.push_back(x(("p" + std::to_string(i)).c_str(), t, 50));
    sorted.push_back(x(("a" + std::to_string(i)).c_str(), t, i % 3 ? 20 : 50 - 0.001 * (1 + i % 7)));
    sorted.push_back(x(("b" + std::to_string(i)).c_str(), t + 30, 10));
  }
  auto join = [](const std::vector<std::string>& v) {
    std::string out;
    for (const auto& e : v) out += (out.empty() ? "" : ",") + e;
    return trace(out);
  };
  auto reference = must_load(join(sorted));
  auto check_like_reference = [&](const std::vector<std::string>& order) {
    auto m = must_load(join(order));
    REQUIRE(m->ev.size() == reference->ev.size());
    for (EventId e = 0; e < m->ev.size(); ++e) {
      CAPTURE(e);
      CHECK(m->strings.view(m->ev.name[e]) == reference->strings.view(reference->ev.name[e]));
      CHECK(m->ev.depth[e] == reference->ev.depth[e]);
    }
    CHECK(m->stats.overlaps == 0);
  };
  SUBCASE("children before their parent") {
    std::vector<std::string> v;
    for (size_t i = 0; i < sorted.size(); i += 3) v.insert(v.end(), {sorted[i + 1], sorted[i + 2], sorted[i]});
    check_like_reference(v);
  }
  SUBCASE("sorted runs that overlap little") {
    std::vector<std::string> v(sorted.begin() + 600, sorted.end());
    v.insert(v.end(), sorted.begin() + 300, sorted.begin() + 600);
    v.insert(v.end(), sorted.begin(), sorted.begin() + 300);
    check_like_reference(v);
  }
  SUBCASE("two interleaved runs") {
    std::vector<std::string> v;
    for (size_t i = 0; i < sorted.size(); i += 2) v.push_back(sorted[i]);
    for (size_t i = 1; i < sorted.size(); i += 2) v.push_back(sorted[i]);
    check_like_reference(v);
  }
  SUBCASE("shuffled") {
    std::vector<std::string> v = sorted;
    std::shuffle(v.begin(), v.end(), std::mt19937(7));
    check_like_reference(v);
  }
}

TEST_CASE("B/E pairs become complete events") {
  auto m = must_load(trace(R"({"ph":"B","name":"outer","pid":1,"tid":1,"ts":0},
    {"ph":"B","name":"inner","pid":1,"tid":1,"ts":10},
    {"ph":"E","pid":1,"tid":1,"ts":20},
    {"ph":"E","pid":1,"tid":1,"ts":100})"));
  REQUIRE(m->ev.size() == 2);
  EventId outer = find_event(*m, "outer"), inner = find_event(*m, "inner");
  CHECK(m->ev.phase[outer] == EventPhase::Complete);
  CHECK(m->ev.dur[outer] == 100'000);
  CHECK(m->ev.dur[inner] == 10'000);
  CHECK(m->parent_of(inner) == outer);
  CHECK(m->stats.per_phase[size_t(EventPhase::Begin)] == 2);
  CHECK(m->warning_count == 0);
}

TEST_CASE("an unmatched B is dropped with a warning") {
  auto m = load_json(trace(R"({"ph":"B","name":"open","pid":1,"tid":1,"ts":0},)" + x("A", 1, 1))).model;
  REQUIRE(m);
  CHECK(m->ev.size() == 1);
  CHECK(m->warning_count == 1);
}

TEST_CASE("string tids, numeric strings and a bare-array file") {
  auto m = must_load(R"([
    {"ph":"X","cat":"kernel","name":"k","pid":0,"tid":"stream 7","ts":1,"dur":1},
    {"ph":"X","cat":"cpu_op","name":"a","pid":"12","tid":"34","ts":1,"dur":1},
    {"ph":"X","cat":"cpu_op","name":"b","pid":12,"tid":34,"ts":3,"dur":1},
    {"ph":"X","cat":"cpu_op","name":"c","pid":"CPU functions","tid":-5,"ts":1,"dur":1}])");
  REQUIRE(m->ev.size() == 4);
  uint32_t k = m->track_of(find_event(*m, "k"));
  CHECK(m->strings.view(m->tracks[k].tid_label) == "stream 7");
  CHECK(m->tracks[k].kind == TrackKind::GpuStream);
  CHECK(m->tracks[k].stream == 7);
  CHECK(m->processes[m->tracks[k].process].device == 0);
  CHECK(m->track_of(find_event(*m, "a")) == m->track_of(find_event(*m, "b")));
  CHECK(find_track(*m, 12, 34) == m->track_of(find_event(*m, "a")));
  uint32_t c = m->track_of(find_event(*m, "c"));
  CHECK(m->strings.view(m->processes[m->tracks[c].process].pid_label) == "CPU functions");
  CHECK(m->tracks[c].tid == -5);
}

TEST_CASE("metadata: process and thread names, labels, sort indices") {
  auto m = must_load(trace(R"(
    {"name":"process_name","ph":"M","pid":3,"tid":0,"args":{"name":"trainer"}},
    {"name":"process_labels","ph":"M","pid":3,"tid":0,"args":{"labels":"GPU 2"}},
    {"name":"process_sort_index","ph":"M","pid":3,"tid":0,"args":{"sort_index":5}},
    {"name":"thread_name","ph":"M","pid":3,"tid":9,"args":{"name":"main thread"}},
    {"name":"thread_name","ph":"M","pid":3,"tid":9,"args":{"name":"renamed later"}},
    {"name":"thread_sort_index","ph":"M","pid":3,"tid":9,"args":{"sort_index":-2}},
    {"ph":"X","cat":"cpu_op","name":"op","pid":3,"tid":9,"ts":1,"dur":1})"));
  uint32_t t = find_track(*m, 3, 9);
  REQUIRE(t != kNoTrack);
  const Process& p = m->processes[m->tracks[t].process];
  CHECK(m->strings.view(p.name) == "trainer");
  CHECK(m->strings.view(p.labels) == "GPU 2");
  CHECK(p.sort_index == 5);
  CHECK(p.device == 2);
  CHECK(m->strings.view(m->tracks[t].name) == "main thread");
  CHECK(m->tracks[t].sort_index == -2);
  CHECK(m->stats.per_phase[size_t(EventPhase::Metadata)] == 6);
}

TEST_CASE("correlation links both ways; duplicate ids resolve by time") {
  auto m = must_load(trace(R"(
    {"ph":"X","cat":"cuda_runtime","name":"L1","pid":1,"tid":1,"ts":100,"dur":5,"args":{"correlation":9}},
    {"ph":"X","cat":"cuda_runtime","name":"L2","pid":1,"tid":2,"ts":300,"dur":5,"args":{"correlation":9}},
    {"ph":"X","cat":"kernel","name":"K2","pid":0,"tid":7,"ts":350,"dur":5,"args":{"correlation":9,"stream":7}},
    {"ph":"X","cat":"kernel","name":"K1","pid":0,"tid":7,"ts":150,"dur":5,"args":{"correlation":9,"stream":7}},
    {"ph":"X","cat":"cuda_driver","name":"cuLaunchKernel","pid":1,"tid":1,"ts":400,"dur":5,"args":{"correlation":3}},
    {"ph":"X","cat":"gpu_memcpy","name":"copy","pid":0,"tid":8,"ts":410,"dur":5,"args":{"correlation":3}},
    {"ph":"X","cat":"kernel","name":"orphan","pid":0,"tid":7,"ts":500,"dur":5,"args":{"correlation":77}})"));
  EventId l1 = find_event(*m, "L1"), l2 = find_event(*m, "L2"), k1 = find_event(*m, "K1"), k2 = find_event(*m, "K2");
  CHECK(m->ev.link[k1] == l1);
  CHECK(m->ev.link[l1] == k1);
  CHECK(m->ev.link[k2] == l2);
  CHECK(m->ev.link[l2] == k2);
  CHECK(m->ev.link[find_event(*m, "copy")] == find_event(*m, "cuLaunchKernel"));
  CHECK(m->ev.link[find_event(*m, "orphan")] == kNoEvent);
  CHECK(m->ev.id[k1] == 9);
  CHECK(m->correlation_of(k1) == 9);
  CHECK(m->correlation_of(l1) == 9);
  CHECK(m->external_id_of(k1) == -1);
  CHECK(m->launch_of(k1) == l1);
  CHECK(m->gpu_op_of(l1) == k1);
  CHECK(m->gpu_op_of(k1) == kNoEvent);
  CHECK(m->stats.gpu_ops == 4);
  CHECK(m->stats.gpu_ops_linked == 3);
  CHECK(m->stats.launches_linked == 3);
}

TEST_CASE("ac2g flows link launches to GPU ops when args are stripped (Hotline style)") {
  auto m = must_load(R"([
    {"ph":"X","cat":"cpu_op","name":"aten::add","pid":8,"tid":8,"ts":90,"dur":30},
    {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":8,"tid":8,"ts":100,"dur":6},
    {"ph":"s","id":"235511","pid":8,"tid":8,"ts":100,"cat":"async_cpu_to_gpu","name":"async_gpu","bp":"e"},
    {"ph":"X","cat":"kernel","name":"add_kernel","pid":0,"tid":7,"ts":200,"dur":2},
    {"ph":"f","id":"235511","pid":0,"tid":7,"ts":200,"cat":"async_cpu_to_gpu","name":"async_gpu","bp":"e"},
    {"ph":"X","cat":"cuda_runtime","name":"cudaMemcpyAsync","pid":8,"tid":8,"ts":110,"dur":6},
    {"ph":"s","id":"copy-1","pid":8,"tid":8,"ts":111,"cat":"ac2g","name":"ac2g"},
    {"ph":"X","cat":"gpu_memcpy","name":"copy","pid":0,"tid":7,"ts":300,"dur":2},
    {"ph":"f","id":"copy-1","pid":0,"tid":7,"ts":300,"cat":"ac2g","name":"ac2g","bp":"e"},
    {"ph":"f","id":"nowhere","pid":0,"tid":7,"ts":300,"cat":"ac2g","name":"ac2g","bp":"e"}])");
  EventId launch = find_event(*m, "cudaLaunchKernel"), kernel = find_event(*m, "add_kernel");
  CHECK(m->ev.link[kernel] == launch);
  CHECK(m->ev.link[launch] == kernel);
  CHECK(m->ev.link[find_event(*m, "copy")] == find_event(*m, "cudaMemcpyAsync"));
  CHECK(m->ev.link[find_event(*m, "aten::add")] == kNoEvent);
  CHECK(m->stats.flows_total == 2);
  CHECK(m->stats.flows_resolved == 2);
  CHECK(m->stats.flow_events_unmatched == 1);
  CHECK(m->stats.gpu_ops_linked == 2);
}

TEST_CASE("fwdbwd pairs from flows") {
  auto m = must_load(trace(R"(
    {"ph":"X","cat":"cpu_op","name":"aten::mul","pid":1,"tid":1,"ts":0,"dur":10},
    {"ph":"s","id":42,"pid":1,"tid":1,"ts":0,"cat":"fwdbwd","name":"fwdbwd"},
    {"ph":"X","cat":"cpu_op","name":"MulBackward0","pid":1,"tid":2,"ts":50,"dur":10},
    {"ph":"f","id":42,"pid":1,"tid":2,"ts":50,"cat":"fwdbwd","name":"fwdbwd","bp":"e"})"));
  EventId fwd = find_event(*m, "aten::mul"), bwd = find_event(*m, "MulBackward0");
  REQUIRE(m->fwd_to_bwd.count(fwd));
  CHECK(m->fwd_to_bwd.at(fwd) == bwd);
  CHECK(m->bwd_to_fwd.at(bwd) == fwd);
  CHECK(m->stats.fwdbwd_pairs == 1);
}

TEST_CASE("fwdbwd pairs from Sequence number and Fwd thread id") {
  auto m = must_load(trace(R"(
    {"ph":"X","cat":"cpu_op","name":"aten::linear","pid":1,"tid":10,"ts":0,"dur":20,"args":{"Sequence number":5}},
    {"ph":"X","cat":"cpu_op","name":"aten::addmm","pid":1,"tid":10,"ts":1,"dur":10,"args":{"Sequence number":5}},
    {"ph":"X","cat":"cpu_op","name":"aten::relu","pid":1,"tid":10,"ts":30,"dur":5,"args":{"Sequence number":6}},
    {"ph":"X","cat":"cpu_op","name":"AddmmBackward0","pid":1,"tid":20,"ts":100,"dur":10,
     "args":{"Sequence number":5,"Fwd thread id":1}},
    {"ph":"X","cat":"cpu_op","name":"ReluBackward0","pid":1,"tid":20,"ts":90,"dur":5,
     "args":{"Sequence number":6,"Fwd thread id":1}})"));
  EventId linear = find_event(*m, "aten::linear"), relu = find_event(*m, "aten::relu");
  CHECK(m->fwd_to_bwd.at(linear) == find_event(*m, "AddmmBackward0"));  // the outermost forward op
  CHECK(m->fwd_to_bwd.at(relu) == find_event(*m, "ReluBackward0"));
  CHECK(m->fwd_to_bwd.count(find_event(*m, "aten::addmm")) == 0);
  CHECK(m->stats.fwdbwd_pairs == 2);
}

// An op takes the number of the next node whether it makes one or not: a dropout that returns
// its input (5, no node), then the residual add that makes node 5; the add's backward is the
// add's. Of the ops numbered 6, the linear holds the addmm that made it.
TEST_CASE("Sequence number: the last outermost op with a number made its node") {
  auto m = must_load(trace(R"(
    {"ph":"X","cat":"cpu_op","name":"aten::dropout","pid":1,"tid":10,"ts":0,"dur":5,"args":{"Sequence number":5}},
    {"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":10,"ts":10,"dur":5,"args":{"Sequence number":5}},
    {"ph":"X","cat":"cpu_op","name":"aten::linear","pid":1,"tid":10,"ts":20,"dur":20,"args":{"Sequence number":6}},
    {"ph":"X","cat":"cpu_op","name":"aten::addmm","pid":1,"tid":10,"ts":21,"dur":10,"args":{"Sequence number":6}},
    {"ph":"X","cat":"cpu_op","name":"AddmmBackward0","pid":1,"tid":20,"ts":100,"dur":10,
     "args":{"Sequence number":6,"Fwd thread id":1}},
    {"ph":"X","cat":"cpu_op","name":"AddBackward0","pid":1,"tid":20,"ts":120,"dur":5,
     "args":{"Sequence number":5,"Fwd thread id":1}})"));
  CHECK(m->bwd_to_fwd.at(find_event(*m, "AddBackward0")) == find_event(*m, "aten::add"));
  CHECK(m->bwd_to_fwd.at(find_event(*m, "AddmmBackward0")) == find_event(*m, "aten::linear"));
  CHECK(m->fwd_to_bwd.count(find_event(*m, "aten::dropout")) == 0);
}

TEST_CASE("python_function frames link to their parent frame") {
  auto m = must_load(trace(R"(
    {"ph":"X","cat":"python_function","name":"train.py(10): main","pid":1,"tid":1,"ts":0,"dur":100,
     "args":{"Python id":1,"Python parent id":0}},
    {"ph":"X","cat":"python_function","name":"nn.Module: Linear_0","pid":1,"tid":1,"ts":10,"dur":50,
     "args":{"Python id":2,"Python parent id":1,"Python module id":0}},
    {"ph":"X","cat":"python_function","name":"linear.py(5): forward","pid":1,"tid":1,"ts":20,"dur":10,
     "args":{"Python id":3,"Python parent id":2}})"));
  EventId main = find_event(*m, "train.py(10): main"), mod = find_event(*m, "nn.Module: Linear_0");
  CHECK(m->python_parent_of(mod) == main);
  CHECK(m->python_parent_of(find_event(*m, "linear.py(5): forward")) == mod);
  CHECK(m->python_parent_of(main) == kNoEvent);
  CHECK(m->gpu_op_of(mod) == kNoEvent);  // the link means a parent frame here, not a GPU op
}

TEST_CASE("gpu_user_annotation links to its user_annotation") {
  auto m = must_load(trace(R"(
    {"ph":"X","cat":"user_annotation","name":"ProfilerStep#4","pid":1,"tid":1,"ts":0,"dur":100,"args":{"External id":11}},
    {"ph":"X","cat":"gpu_user_annotation","name":"ProfilerStep#4","pid":0,"tid":7,"ts":10,"dur":100,"args":{"External id":11}})"));
  EventId cpu = kNoEvent, gpu = kNoEvent;
  for (EventId e = 0; e < m->ev.size(); ++e) (m->ev.category(e) == Cat::UserAnnotation ? cpu : gpu) = e;
  CHECK(m->paired_annotation_of(gpu) == cpu);
  CHECK(m->paired_annotation_of(cpu) == gpu);
  CHECK(m->host_side_of(gpu) == cpu);
  CHECK(m->launch_of(gpu) == kNoEvent);  // a GPU range is not launched
  CHECK(m->external_id_of(cpu) == 11);
  CHECK(m->is_profiler_step(cpu));
  CHECK_FALSE(m->is_profiler_step(gpu));  // the GPU-side copy of the range
  CHECK(profiler_step_number(m->name_of(cpu)) == 4);
  CHECK(profiler_step_number("ProfilerStep#x") == -1);
  StepInfo steps = profiler_steps(*m);
  CHECK(steps.steps.size() == 1);
}

// Scalar top-level values are read as well as objects and arrays.
TEST_CASE("header: baseTimeNanoseconds added, displayTimeUnit and names kept") {
  auto m = must_load(R"({"schemaVersion":1,"displayTimeUnit":"ns","baseTimeNanoseconds":1700000000000000000,
    "traceName":"run.json","traceEvents":[
    {"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":1.5,"dur":2},
    {"ph":"C","name":"mem","pid":1,"ts":3,"args":{"used":5}},
    {"ph":"i","s":"t","cat":"cpu_instant_event","name":"[memory]","pid":1,"tid":1,"ts":4,"args":{"Bytes":8}}]})");
  CHECK(m->base_time_ns == 1700000000000000000);
  CHECK(m->ev.start[0] == 1700000000000001500);
  CHECK(m->time_begin == 1700000000000001500);
  CHECK(m->time_end == 1700000000000003500);
  REQUIRE(m->counters.size() == 1);
  CHECK(m->counters[0].ts[0] == 1700000000000003000);
  REQUIRE(m->memory.size() == 1);
  CHECK(m->memory.ts[0] == 1700000000000004000);
  CHECK(m->display_time_unit == "ns");
  CHECK(m->schema_version == "1");
  CHECK(m->trace_name == "run.json");
}

TEST_CASE("[memory] instants go to MemoryEvents, not to the event columns") {
  auto m = must_load(trace(R"(
    {"ph":"i","s":"t","cat":"cpu_instant_event","name":"[memory]","pid":1,"tid":1,"ts":5,
     "args":{"Addr":123456,"Bytes":-512,"Total Allocated":1024,"Total Reserved":2048,"Device Type":1,"Device Id":3}},
    {"ph":"i","s":"t","cat":"cpu_instant_event","name":"other instant","pid":1,"tid":1,"ts":6})"));
  REQUIRE(m->memory.size() == 1);
  CHECK(m->memory.bytes[0] == -512);
  CHECK(m->memory.addr[0] == 123456);
  CHECK(m->memory.total_allocated[0] == 1024);
  CHECK(m->memory.total_reserved[0] == 2048);
  CHECK(m->memory.device_type[0] == 1);
  CHECK(m->memory.device_id[0] == 3);
  REQUIRE(m->ev.size() == 1);
  CHECK(m->name_of(0) == "other instant");
  CHECK(m->ev.phase[0] == EventPhase::Instant);
}

TEST_CASE("[memory] events with only Bytes get running totals per device, never below zero") {
  // GPU 0: frees 100 first (allocated before the trace), so its sum starts at 100.
  // CPU: only allocations, starts at 0. Out of file order on purpose.
  auto m = must_load(trace(R"(
    {"ph":"i","s":"t","cat":"cpu_instant_event","name":"[memory]","pid":1,"tid":1,"ts":3,"args":{"Bytes":50,"Device Type":1,"Device Id":0}},
    {"ph":"i","s":"t","cat":"cpu_instant_event","name":"[memory]","pid":1,"tid":1,"ts":1,"args":{"Bytes":-100,"Device Type":1,"Device Id":0}},
    {"ph":"i","s":"t","cat":"cpu_instant_event","name":"[memory]","pid":1,"tid":1,"ts":2,"args":{"Bytes":30,"Device Type":0,"Device Id":-1}},
    {"ph":"i","s":"t","cat":"cpu_instant_event","name":"[memory]","pid":1,"tid":1,"ts":4,"args":{"Bytes":20,"Device Type":0,"Device Id":-1}})"));
  const MemoryEvents& me = m->memory;
  REQUIRE(me.size() == 4);
  CHECK(std::is_sorted(me.ts.begin(), me.ts.end()));
  CHECK(me.totals_derived);
  CHECK_FALSE(me.reserved_recorded);
  CHECK_FALSE(me.addresses_recorded);
  CHECK(me.bytes == std::vector<int64_t>{-100, 30, 50, 20});
  CHECK(me.total_allocated == std::vector<int64_t>{0, 30, 50, 50});
  CHECK(me.total_reserved == std::vector<int64_t>{0, 0, 0, 0});
}

TEST_CASE("[memory] totals the trace records are kept; Bytes continue from the last one") {
  auto m = must_load(trace(R"(
    {"ph":"i","s":"t","cat":"cpu_instant_event","name":"[memory]","pid":1,"tid":1,"ts":1,"args":{"Addr":8,"Bytes":64,"Total Allocated":1000,"Total Reserved":2048,"Device Type":1,"Device Id":0}},
    {"ph":"i","s":"t","cat":"cpu_instant_event","name":"[memory]","pid":1,"tid":1,"ts":2,"args":{"Bytes":-64,"Device Type":1,"Device Id":0}})"));
  const MemoryEvents& me = m->memory;
  REQUIRE(me.size() == 2);
  CHECK(me.total_allocated == std::vector<int64_t>{1000, 936});
  CHECK(me.totals_derived);
  CHECK(me.reserved_recorded);
  CHECK(me.addresses_recorded);
}

TEST_CASE("counters become one series per (process, name, key), sorted by time") {
  auto m = must_load(trace(R"(
    {"ph":"C","name":"mem","pid":1,"ts":2,"args":{"used":5,"free":7}},
    {"ph":"C","name":"mem","pid":1,"ts":1,"args":{"used":4,"free":8}},
    {"ph":"C","name":"util","pid":1,"ts":1,"args":{"value":0.5}},
    {"ph":"C","name":"util","pid":2,"ts":1,"args":{"value":0.25}})"));
  REQUIRE(m->counters.size() == 4);
  auto series = [&](uint32_t pid, std::string_view name) -> const CounterSeries* {
    for (const CounterSeries& s : m->counters)
      if (m->processes[s.process].pid == pid && m->strings.view(s.name) == name) return &s;
    return nullptr;
  };
  const CounterSeries* used = series(1, "mem.used");
  REQUIRE(used);
  CHECK(used->ts == std::vector<Ns>{1000, 2000});
  CHECK(used->value == std::vector<double>{4, 5});
  REQUIRE(series(1, "mem.free"));
  REQUIRE(series(1, "util"));
  CHECK(series(2, "util")->value == std::vector<double>{0.25});
}

TEST_CASE("top-level keys before and after traceEvents") {
  std::string events = R"("traceEvents":[{"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":1,"dur":1}])";
  std::string dist = R"("distributedInfo":{"backend":"nccl","rank":3,"world_size":8,"pg_config":[{"a":"}"}]})";
  std::string devs = R"("deviceProperties":[{"id":0,"name":"NVIDIA H100","totalGlobalMem":85,"computeMajor":9,
    "computeMinor":0,"numSms":132},{"id":1,"name":"NVIDIA H100"}])";
  for (const std::string& json : {"{" + dist + "," + devs + "," + events + "}", "{" + events + "," + dist + "," + devs + "}",
                                  "{\"x\":{\"traceEvents\":5}," + devs + "," + events + "," + dist + ",\"last\":[1,2]}"}) {
    CAPTURE(json);
    auto m = must_load(json);
    CHECK(m->ev.size() == 1);
    CHECK(m->distributed.backend == "nccl");
    CHECK(m->distributed.rank == 3);
    CHECK(m->distributed.world_size == 8);
    REQUIRE(m->devices.size() == 2);
    CHECK(m->devices[0].name == "NVIDIA H100");
    CHECK(m->devices[0].num_sms == 132);
    CHECK(m->devices[0].compute_major == 9);
    CHECK(m->devices[1].id == 1);
    CHECK(m->warning_count == 0);
  }
}

TEST_CASE("escaped names are unescaped; source_of gives the event's bytes") {
  auto m = must_load(trace(R"({"ph":"X","cat":"cpu_op","name":"a\"b\u00e9\\","pid":1,"tid":1,"ts":1,"dur":1})"));
  CHECK(m->name_of(0) == "a\"b\xC3\xA9\\");
  CHECK(m->source_of(0).starts_with(R"({"ph":"X")"));
  CHECK(m->source_of(0).ends_with("}"));
  CHECK(m->source_of(1).empty());
}

namespace {

// A multi-MB trace whose args are full of "}, {" in strings and arrays of objects, so
// that the loader's guessed chunk boundaries land inside strings and inside events.
std::string tricky_trace(size_t events) {
  std::mt19937 rng(7);
  std::string s = R"({"schemaVersion":1,"traceEvents":[)";
  for (size_t i = 0; i < events; ++i) {
    if (i) s += i % 3 ? ", " : ",\n";
    int tid = int(rng() % 4);
    long ts = long(i / 4) * 10 + long(rng() % 3);
    std::string args = R"({"note":"}, {\"ph\":\"X\"}, {","shapes":[{"a":[1,2]}, {"b":[{"c":"}, {"}, {"d":3}]}],)";
    args += R"("External id":)" + std::to_string(i) + R"(,"correlation":)" + std::to_string(i / 2) + "}";
    const char* cat = i % 2 ? "kernel" : "cuda_runtime";
    int pid = i % 2 ? 0 : 1;
    s += R"({"ph":"X","cat":")" + std::string(cat) + R"(","name":"op)" + std::to_string(rng() % 50) +
         R"(","pid":)" + std::to_string(pid) + R"(,"tid":)" + std::to_string(tid) + R"(,"ts":)" + std::to_string(ts) +
         "." + std::to_string(rng() % 1000) + R"(,"dur":)" + std::to_string(1 + rng() % 30) + R"(,"args":)" + args + "}";
    if (i % 5 == 0)
      s += R"(, {"ph":"s","id":)" + std::to_string(i) + R"(,"pid":1,"tid":)" + std::to_string(tid) + R"(,"ts":)" +
           std::to_string(ts) + R"(,"cat":"ac2g","name":"ac2g"})";
  }
  return s + R"(],"distributedInfo":{"rank":1,"world_size":2}})";
}

}  // namespace

TEST_CASE("a parallel load equals the single-threaded load, column by column" * doctest::timeout(120)) {
  std::string json = tricky_trace(30000);
  REQUIRE(json.size() > (6u << 20));
  auto one = must_load(json, 1);
  auto four = must_load(json, 4);
  CHECK(one->ev.size() == 30000);
  CHECK(one->stats.trace_events == 36000);
  CHECK(four->distributed.rank == 1);
  check_same_model(*one, *four);
  check_same_model(*one, *must_load(json, 13));
}
