#include "cupti_decode.h"

namespace strata::collector {

static_assert(uint32_t(SyncType::EventSync) == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE);
static_assert(uint32_t(SyncType::StreamWaitEvent) == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT);
static_assert(uint32_t(SyncType::StreamSync) == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE);
static_assert(uint32_t(SyncType::ContextSync) == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE);
static_assert(kInvalidStream == CUPTI_SYNCHRONIZATION_INVALID_VALUE);
static_assert(CUPTI_ACTIVITY_MEMCPY_KIND_PTOP == 10 && CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC == 7,
              "chrome_writer.cpp's memcpy/memory name tables follow these values");

namespace {

std::string_view overhead_name(CUpti_ActivityOverheadKind k) {
  switch (k) {
    case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER: return "Driver compiler";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH: return "CUPTI buffer flush";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION: return "CUPTI instrumentation";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE: return "CUPTI resource";
    case CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING: return "Module loading";
    case CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING: return "Lazy function loading";
    case CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL: return "Command buffer full";
    case CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST: return "Activity buffer request";
    default: return "CUPTI overhead";
  }
}

std::string_view str(const char* s) { return s != nullptr ? std::string_view(s) : std::string_view(); }

void decode_kernel(const CUpti_ActivityKernel10& k, Record& out) {
  out.kind = RecordKind::Kernel;
  out.start = k.start;
  out.end = k.end;
  out.device = k.deviceId;
  out.context = k.contextId;
  out.stream = k.streamId;
  out.correlation = k.correlationId;
  out.grid[0] = k.gridX;
  out.grid[1] = k.gridY;
  out.grid[2] = k.gridZ;
  out.block[0] = k.blockX;
  out.block[1] = k.blockY;
  out.block[2] = k.blockZ;
  out.registers = k.registersPerThread;
  out.static_smem = static_cast<uint32_t>(k.staticSharedMemory);
  out.dynamic_smem = static_cast<uint32_t>(k.dynamicSharedMemory);
  out.queued = k.queued;  // 0 (CUPTI_TIMESTAMP_UNKNOWN) unless latency timestamps are on
  out.name = str(k.name);
}

}  // namespace

bool decode_activity(const CUpti_Activity& rec, ApiNameFn api_name, Record& out) {
  out = Record{};
  switch (rec.kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      decode_kernel(reinterpret_cast<const CUpti_ActivityKernel10&>(rec), out);
      return true;
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto& m = reinterpret_cast<const CUpti_ActivityMemcpy6&>(rec);
      out.kind = RecordKind::Memcpy;
      out.start = m.start;
      out.end = m.end;
      out.device = m.deviceId;
      out.context = m.contextId;
      out.stream = m.streamId;
      out.correlation = m.correlationId;
      out.bytes = m.bytes;
      out.sub_kind = m.copyKind;
      out.src_kind = m.srcKind;
      out.dst_kind = m.dstKind;
      return true;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto& m = reinterpret_cast<const CUpti_ActivityMemset4&>(rec);
      out.kind = RecordKind::Memset;
      out.start = m.start;
      out.end = m.end;
      out.device = m.deviceId;
      out.context = m.contextId;
      out.stream = m.streamId;
      out.correlation = m.correlationId;
      out.bytes = m.bytes;
      out.src_kind = m.memoryKind;
      return true;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      const auto& a = reinterpret_cast<const CUpti_ActivityAPI&>(rec);
      out.kind = rec.kind == CUPTI_ACTIVITY_KIND_RUNTIME ? RecordKind::Runtime : RecordKind::Driver;
      out.start = a.start;
      out.end = a.end;
      out.pid = a.processId;
      out.tid = a.threadId;
      out.correlation = a.correlationId;
      out.cbid = a.cbid;
      out.name = api_name(out.kind, a.cbid);
      return true;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const auto& s = reinterpret_cast<const CUpti_ActivitySynchronization2&>(rec);
      out.kind = RecordKind::Sync;
      out.start = s.start;
      out.end = s.end;
      out.context = s.contextId;
      out.stream = s.streamId;
      out.correlation = s.correlationId;
      out.sub_kind = static_cast<uint32_t>(s.type);
      return true;
    }
    case CUPTI_ACTIVITY_KIND_OVERHEAD: {
      const auto& o = reinterpret_cast<const CUpti_ActivityOverhead3&>(rec);
      out.kind = RecordKind::Overhead;
      out.start = o.start;
      out.end = o.end;
      if (o.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD || o.objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS) {
        out.pid = o.objectId.pt.processId;
        out.tid = o.objectId.pt.threadId;
      } else {
        out.device = o.objectId.dcs.deviceId;
      }
      out.sub_kind = static_cast<uint32_t>(o.overheadKind);
      out.name = overhead_name(o.overheadKind);
      return true;
    }
    case CUPTI_ACTIVITY_KIND_MARKER: {
      const auto& m = reinterpret_cast<const CUpti_ActivityMarker2&>(rec);
      if (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_START) out.kind = RecordKind::RangeStart;
      else if (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_END) out.kind = RecordKind::RangeEnd;
      else if (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS) out.kind = RecordKind::Mark;
      else return false;  // synchronization markers are not kept
      out.start = m.timestamp;
      out.end = m.timestamp;
      out.range_id = m.id;
      if (m.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD || m.objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS) {
        out.pid = m.objectId.pt.processId;
        out.tid = m.objectId.pt.threadId;
      }
      out.name = str(m.name);
      out.domain = str(m.domain);
      return true;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const auto& e = reinterpret_cast<const CUpti_ActivityExternalCorrelation&>(rec);
      out.kind = RecordKind::ExternalCorrelation;
      out.correlation = e.correlationId;
      out.external_id = e.externalId;
      return true;
    }
    default: return false;
  }
}

}  // namespace strata::collector
