// Compact records -> Chrome trace JSON, checked with a real parser.
#include <doctest/doctest.h>

#include <string>
#include <tuple>
#include <vector>

#include "json_check.h"
#include "trace/api_names.h"
#include "trace/chrome_writer.h"

using namespace strata::collector;

namespace {

constexpr uint64_t kBase = 1'700'000'000'000'000'000ull;

Record api(uint32_t corr, uint64_t start, std::string_view name) {
  Record r;
  r.kind = RecordKind::Runtime;
  r.start = start;
  r.end = start + 5000;
  r.pid = 100;
  r.tid = 101;
  r.correlation = corr;
  r.cbid = 211;
  r.name = name;
  return r;
}

Record kernel(uint32_t corr, uint64_t start) {
  Record r;
  r.kind = RecordKind::Kernel;
  r.start = start;
  r.end = start + 20000;
  r.device = 0;
  r.stream = 7;
  r.correlation = corr;
  r.grid[0] = 264;
  r.grid[1] = r.grid[2] = 1;
  r.block[0] = 256;
  r.block[1] = r.block[2] = 1;
  r.name = "gemm_kernel";
  return r;
}

TraceHeader header() {
  TraceHeader h;
  DeviceRecord d;
  d.name = "Test GPU";
  d.num_sms = 132;
  d.compute_major = 9;
  h.devices.push_back(d);
  h.base_ns = kBase;
  h.pid = 100;
  h.command = "python train.py";
  h.trace_name = "unit";
  return h;
}

}  // namespace

TEST_CASE("API names lose their version suffix; noisy calls are recognized") {
  CHECK(strip_api_version("cudaLaunchKernel_v7000") == "cudaLaunchKernel");
  CHECK(strip_api_version("cuLaunchKernel") == "cuLaunchKernel");
  CHECK(strip_api_version("odd_vX") == "odd_vX");
  CHECK(is_noisy_api("cudaGetDevice"));
  CHECK(is_noisy_api("cudaStreamIsCapturing"));
  CHECK_FALSE(is_noisy_api("cudaLaunchKernel"));
  CHECK(is_recorded_driver_api("cuLaunchKernelEx"));
  CHECK_FALSE(is_recorded_driver_api("cuCtxGetCurrent"));
  CHECK(is_recorded_runtime_api("cudaLaunchKernelExC"));
  CHECK(is_recorded_runtime_api("cudaMemcpyAsync"));
  CHECK(is_recorded_runtime_api("cudaStreamSynchronize"));
  CHECK_FALSE(is_recorded_runtime_api("cudaGetDevice"));
  CHECK_FALSE(is_recorded_runtime_api("cudaStreamIsCapturing"));
}

TEST_CASE("kernels, launches, flows, ranges and copies become Kineto-style events") {
  StringSink sink;
  ChromeTraceWriter w(sink);
  w.begin(header());
  // GPU op before its launch record and the other way round: both must pair.
  w.add(kernel(1, kBase + 2'000'000));
  w.add(api(1, kBase + 1'000'000, "cudaLaunchKernel"));
  w.add(api(2, kBase + 3'000'000, "cudaMemcpyAsync"));
  Record ext;
  ext.kind = RecordKind::ExternalCorrelation;
  ext.correlation = 2;
  ext.external_id = 77;
  w.add(ext);
  Record copy;
  copy.kind = RecordKind::Memcpy;
  copy.start = kBase + 4'000'000;
  copy.end = kBase + 4'001'000;
  copy.stream = 7;
  copy.correlation = 2;
  copy.bytes = 4096;
  copy.sub_kind = 1;  // HtoD
  copy.src_kind = 1;  // pageable
  copy.dst_kind = 3;  // device
  w.add(copy);
  Record start;
  start.kind = RecordKind::RangeStart;
  start.range_id = 9;
  start.start = kBase + 500'000;
  start.pid = 100;
  start.tid = 101;
  start.name = "iteration";
  w.add(start);
  Record end = start;
  end.kind = RecordKind::RangeEnd;
  end.start = end.end = kBase + 5'000'000;
  end.name = {};
  w.add(end);
  Record sync;
  sync.kind = RecordKind::Sync;
  sync.start = kBase + 5'000'000;
  sync.end = kBase + 5'100'000;
  sync.stream = kInvalidStream;
  sync.sub_kind = static_cast<uint32_t>(SyncType::ContextSync);
  w.add(sync);
  TraceStats stats;
  stats.records = 8;
  stats.dropped = 3;
  w.finish(stats);

  const std::string& json = sink.text();
  const auto s = test::summarize(json);
  REQUIRE_MESSAGE(s.parsed, s.error);
  CHECK(s.devices == 1);
  CHECK(s.categories.at("kernel") == 1);
  CHECK(s.categories.at("cuda_runtime") == 2);
  CHECK(s.categories.at("gpu_memcpy") == 1);
  CHECK(s.categories.at("user_annotation") == 1);
  CHECK(s.categories.at("cuda_sync") == 1);
  CHECK(s.flow_starts == std::set<uint64_t>{1, 2});
  CHECK(s.flow_ends == s.flow_starts);
  CHECK(s.names.at("Memcpy HtoD (Pageable -> Device)") == 1);
  CHECK(s.names.at("cudaDeviceSynchronize") == 1);
  CHECK(s.min_ts == doctest::Approx(500.0));
  CHECK(s.metadata >= 4);  // stream and thread names, GPU and process names
  CHECK(json.find("\"External id\": 77") != std::string::npos);
  CHECK(json.find("\"grid\": [264, 1, 1]") != std::string::npos);
  CHECK(json.find("\"blocks per SM\": 2.000") != std::string::npos);
  CHECK(json.find("\"droppedRecords\": 3") != std::string::npos);
  CHECK(json.find("\"name\": \"stream 7\"") != std::string::npos);
  CHECK(json.find("\"name\": \"python train.py\"") != std::string::npos);
  // One event per line, so a growing file can be read up to its last full line.
  CHECK(json.find("\n  {\"ph\": \"X\", \"cat\": \"kernel\"") != std::string::npos);
}

TEST_CASE("rows are named when their first event is written, so a growing file has the names") {
  StringSink sink;
  ChromeTraceWriter w(sink);
  w.begin(header());
  w.add(kernel(1, kBase + 2'000'000));
  w.add(api(1, kBase + 1'000'000, "cudaLaunchKernel"));
  w.add(api(2, kBase + 3'000'000, "cudaLaunchKernel"));
  const std::string mid = sink.text();  // what a live view reads before the recording ends
  CHECK(mid.find("\"name\": \"stream 7\"") != std::string::npos);
  CHECK(mid.find("\"name\": \"GPU 0\"") != std::string::npos);
  CHECK(mid.find("\"name\": \"thread 101\"") != std::string::npos);
  CHECK(mid.find("\"name\": \"python train.py\"") != std::string::npos);
  w.finish(TraceStats{});
  const auto s = test::summarize(sink.text());
  REQUIRE_MESSAGE(s.parsed, s.error);
  CHECK(s.metadata == 4);  // each row and process named once
}

TEST_CASE("a range that began the recording is closed by the next unknown end on its thread") {
  StringSink sink;
  ChromeTraceWriter w(sink);
  w.begin(header());
  w.add_open_range(kBase + 1000, 100, 101, "iteration 0");
  Record end;
  end.kind = RecordKind::RangeEnd;
  end.range_id = 42;  // CUPTI recorded only the end
  end.start = end.end = kBase + 9000;
  end.pid = 100;
  end.tid = 101;
  w.add(end);
  Record open;
  open.kind = RecordKind::RangeStart;
  open.range_id = 43;
  open.start = kBase + 9500;
  open.pid = 100;
  open.tid = 101;
  open.name = "still open";
  w.add(open);
  w.add(kernel(5, kBase + 10'000));
  w.finish({});
  const auto s = test::summarize(sink.text());
  REQUIRE_MESSAGE(s.parsed, s.error);
  CHECK(s.names.at("iteration 0") == 1);
  CHECK(s.names.at("still open") == 1);  // closed at the latest timestamp, marked unfinished
  CHECK(sink.text().find("\"unfinished\": 1") != std::string::npos);
  CHECK(sink.text().find("\"unmatchedRanges\": 1") != std::string::npos);
}

TEST_CASE("join bookkeeping stays bounded and counts what it evicts") {
  StringSink sink;
  ChromeTraceWriter w(sink, 4);
  w.begin(header());
  for (uint32_t i = 1; i <= 20; ++i) w.add(api(i, kBase + i * 1000, "cudaLaunchKernel"));
  w.finish({});
  const auto s = test::summarize(sink.text());
  REQUIRE(s.parsed);
  CHECK(s.flow_starts.empty());
  CHECK(sink.text().find("\"evictedJoins\": 16") != std::string::npos);
}

TEST_CASE("an empty recording is still a valid trace") {
  StringSink sink;
  ChromeTraceWriter w(sink);
  w.begin(TraceHeader{});
  w.finish({});
  const auto s = test::summarize(sink.text());
  CHECK_MESSAGE(s.parsed, s.error);
  CHECK(s.categories.empty());
}

TEST_CASE("a process that knows its rank says so in distributedInfo, as torch.profiler does") {
  for (const auto& [rank, world_size, expected] : std::vector<std::tuple<int64_t, int64_t, std::string>>{
           {2, 4, "\"distributedInfo\": {\"rank\": 2, \"world_size\": 4}"},
           {1, -1, "\"distributedInfo\": {\"rank\": 1}"},
           {-1, -1, ""}}) {
    StringSink sink;
    ChromeTraceWriter w(sink);
    TraceHeader h;
    h.rank = rank;
    h.world_size = world_size;
    w.begin(h);
    w.finish({});
    CHECK_MESSAGE(test::summarize(sink.text()).parsed, sink.text());
    if (expected.empty()) CHECK(sink.text().find("distributedInfo") == std::string::npos);
    else CHECK_MESSAGE(sink.text().find(expected) != std::string::npos, sink.text());
  }
}
