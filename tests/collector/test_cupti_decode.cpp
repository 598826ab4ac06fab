// CUPTI activity records, laid out per the CUPTI headers and filled by hand, through the
// decoder and the writer: what a CI machine without a GPU can check of the agent's path.
#include <doctest/doctest.h>

#include <cstring>

#include "json_check.h"
#include "trace/chrome_writer.h"
#include "trace/cupti_decode.h"

#include <cupti_runtime_cbid.h>

using namespace strata::collector;

namespace {

std::string_view test_api_name(RecordKind kind, uint32_t cbid) {
  if (kind == RecordKind::Runtime && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000) return "cudaLaunchKernel";
  return kind == RecordKind::Driver ? "cuLaunchKernel" : "cudaSomething";
}

template <class T>
T zeroed() {
  T t;
  std::memset(static_cast<void*>(&t), 0, sizeof t);
  return t;
}

const CUpti_Activity& as_activity(const void* p) { return *static_cast<const CUpti_Activity*>(p); }

}  // namespace

TEST_CASE("CUPTI kernel, API, memset, marker and overhead records decode and convert") {
  auto k = zeroed<CUpti_ActivityKernel10>();
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = 2'000'000'000;
  k.end = 2'000'050'000;
  k.deviceId = 0;
  k.contextId = 1;
  k.streamId = 13;
  k.correlationId = 42;
  k.gridX = 128;
  k.gridY = k.gridZ = 1;
  k.blockX = 256;
  k.blockY = k.blockZ = 1;
  k.registersPerThread = 32;
  k.staticSharedMemory = 1024;
  k.dynamicSharedMemory = 2048;
  k.name = "void add<float>(float*)";

  auto a = zeroed<CUpti_ActivityAPI>();
  a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
  a.start = 1'999'990'000;
  a.end = 1'999'995'000;
  a.processId = 1234;
  a.threadId = 1235;
  a.correlationId = 42;

  auto m = zeroed<CUpti_ActivityMemset4>();
  m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  m.start = 2'000'100'000;
  m.end = 2'000'101'000;
  m.streamId = 13;
  m.correlationId = 43;
  m.bytes = 1 << 20;
  m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;

  auto mk_start = zeroed<CUpti_ActivityMarker2>();
  mk_start.kind = CUPTI_ACTIVITY_KIND_MARKER;
  mk_start.flags = CUPTI_ACTIVITY_FLAG_MARKER_START;
  mk_start.timestamp = 1'999'900'000;
  mk_start.id = 7;
  mk_start.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  mk_start.objectId.pt.processId = 1234;
  mk_start.objectId.pt.threadId = 1235;
  mk_start.name = "iteration 3";
  auto mk_end = mk_start;
  mk_end.flags = CUPTI_ACTIVITY_FLAG_MARKER_END;
  mk_end.timestamp = 2'000'200'000;
  mk_end.name = nullptr;

  auto o = zeroed<CUpti_ActivityOverhead3>();
  o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
  o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
  o.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  o.objectId.pt.processId = 1234;
  o.objectId.pt.threadId = 1240;
  o.start = 2'000'300'000;
  o.end = 2'000'310'000;

  auto s = zeroed<CUpti_ActivitySynchronization2>();
  s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
  s.start = 2'000'060'000;
  s.end = 2'000'070'000;
  s.contextId = 1;
  s.streamId = 13;
  s.correlationId = 44;

  auto e = zeroed<CUpti_ActivityExternalCorrelation>();
  e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  e.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
  e.externalId = 900;
  e.correlationId = 42;

  auto unknown = zeroed<CUpti_ActivityAPI>();
  unknown.kind = CUPTI_ACTIVITY_KIND_NAME;

  StringSink sink;
  ChromeTraceWriter w(sink);
  TraceHeader h;
  h.base_ns = 1'000'000'000;
  w.begin(h);
  Record r;
  for (const void* rec : {static_cast<const void*>(&mk_start), static_cast<const void*>(&e),
                          static_cast<const void*>(&a), static_cast<const void*>(&k), static_cast<const void*>(&m),
                          static_cast<const void*>(&s), static_cast<const void*>(&mk_end),
                          static_cast<const void*>(&o)}) {
    REQUIRE(decode_activity(as_activity(rec), test_api_name, r));
    w.add(r);
  }
  CHECK_FALSE(decode_activity(as_activity(&unknown), test_api_name, r));

  REQUIRE(decode_activity(as_activity(&k), test_api_name, r));
  CHECK(r.kind == RecordKind::Kernel);
  CHECK(r.stream == 13);
  CHECK(r.grid[0] == 128);
  CHECK(r.static_smem + r.dynamic_smem == 3072);
  CHECK(r.name == "void add<float>(float*)");
  REQUIRE(decode_activity(as_activity(&mk_start), test_api_name, r));
  CHECK(r.kind == RecordKind::RangeStart);
  CHECK(r.tid == 1235);

  w.finish({});
  const auto sum = test::summarize(sink.text());
  REQUIRE_MESSAGE(sum.parsed, sum.error);
  CHECK(sum.categories.at("kernel") == 1);
  CHECK(sum.categories.at("cuda_runtime") == 1);
  CHECK(sum.categories.at("gpu_memset") == 1);
  CHECK(sum.categories.at("cuda_sync") == 1);
  CHECK(sum.categories.at("overhead") == 1);
  CHECK(sum.categories.at("user_annotation") == 1);
  CHECK(sum.names.at("iteration 3") == 1);
  CHECK(sum.names.at("cudaStreamSynchronize") == 1);
  CHECK(sum.names.at("Memset (Device)") == 1);
  CHECK(sum.flow_starts == std::set<uint64_t>{42});
  CHECK(sum.flow_ends == sum.flow_starts);
  CHECK(sink.text().find("\"External id\": 900") != std::string::npos);
  CHECK(sink.text().find("\"ts\": 999990.000") != std::string::npos);  // launch: 1999990000 ns - 1e9 base
}
