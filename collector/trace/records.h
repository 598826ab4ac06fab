// Compact activity records: what the agent keeps of each CUPTI record.
// Plain C++ so the JSON conversion builds and is tested without CUDA.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata::collector {

enum class RecordKind : uint8_t {
  Kernel,
  Memcpy,
  Memset,
  Runtime,
  Driver,
  Sync,
  Overhead,
  RangeStart,  // NVTX push/start; paired with RangeEnd by range_id
  RangeEnd,
  Mark,        // NVTX instantaneous marker
  ExternalCorrelation,
};

// Numeric values follow CUPTI's enums (checked with static_assert in cupti_decode.cpp).
enum class SyncType : uint32_t { Unknown = 0, EventSync = 1, StreamWaitEvent = 2, StreamSync = 3, ContextSync = 4 };
inline constexpr uint32_t kInvalidStream = 0xffffffffu;

struct Record {
  RecordKind kind = RecordKind::Kernel;
  uint64_t start = 0;  // ns, CUPTI clock
  uint64_t end = 0;
  uint32_t device = 0;
  uint32_t context = 0;
  uint32_t stream = 0;
  uint32_t correlation = 0;
  uint32_t pid = 0;  // CPU-side records: OS process and thread
  uint32_t tid = 0;
  uint64_t external_id = 0;  // ExternalCorrelation
  uint64_t bytes = 0;        // memcpy/memset
  int32_t grid[3] = {0, 0, 0};
  int32_t block[3] = {0, 0, 0};
  uint32_t registers = 0;
  uint32_t static_smem = 0;
  uint32_t dynamic_smem = 0;
  uint64_t queued = 0;     // kernel queued timestamp, 0 when unknown
  uint32_t cbid = 0;       // runtime/driver callback id
  uint32_t sub_kind = 0;   // memcpy kind, sync type, overhead kind
  uint32_t src_kind = 0;   // memcpy source / memset memory kind
  uint32_t dst_kind = 0;   // memcpy destination memory kind
  uint32_t range_id = 0;   // NVTX range id
  std::string_view name;   // valid while the source buffer lives
  std::string_view domain; // NVTX domain, empty for the default one
};

// One kernel launch's hardware counters from CUPTI's range profiler, in the order of
// TraceHeader::metrics. The writer puts them on the kernel's own row and time, found by
// correlation id; without the kernel, at the launch's time on the device's row 0 (Kineto's place).
struct KernelCounters {
  uint32_t correlation = 0;
  uint32_t device = 0;
  uint64_t launched = 0;      // ns, CUPTI clock: the launch call's return
  std::string_view kernel;    // the launch's kernel name
  const double* values = nullptr;
};

struct DeviceRecord {
  int id = 0;
  std::string name;
  uint64_t total_global_mem = 0;
  int compute_major = 0;
  int compute_minor = 0;
  int num_sms = 0;
  int warp_size = 32;
  int max_threads_per_block = 0;
  int max_threads_per_sm = 0;
  int regs_per_block = 0;
  int regs_per_sm = 0;
  int shared_mem_per_block = 0;
  int shared_mem_per_sm = 0;
  int shared_mem_per_block_optin = 0;
};

struct TraceHeader {
  std::vector<DeviceRecord> devices;
  uint64_t base_ns = 0;  // timestamps are written relative to this
  uint32_t pid = 0;
  std::string command;   // the job's command line, for process_name
  std::string trace_name;
  int64_t rank = -1;        // distributedInfo, when the process knows its place in a job
  int64_t world_size = -1;
  std::vector<std::string> metrics;  // hardware metrics collected per kernel (cuda_profiler_range)
};

struct TraceStats {
  uint64_t records = 0;
  uint64_t dropped = 0;  // records CUPTI could not store (pool exhausted)
};

}  // namespace strata::collector
