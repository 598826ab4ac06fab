// Memory findings as text and JSON: the summary's `memory` object and what is alive at a
// moment (docs/summary-json.md).
#include "core/annotate/annotation.h"
#include "core/json_writer.h"
#include "core/text_format.h"

namespace strata {

namespace {

void write_categories(JsonWriter& w, std::string_view key, const LiveMemory& l) {
  w.key(key).begin_object();
  for (size_t c = 0; c < size_t(MemoryCategory::Count); ++c) w.field(memory_category_key(MemoryCategory(c)), l.bytes[c]);
  w.end_object();
  w.field("before_trace", l.before_trace).field("before_trace_in", memory_category_key(l.before_trace_as)).field("split", l.split);
}

void write_layers(JsonWriter& w, std::string_view key, const LiveMemory& l, size_t max_layers) {
  w.key(key).begin_array();
  for (size_t i = 0; i < l.layers.size() && i < max_layers; ++i)
    w.begin_object().field("path", l.layers[i].path).field("bytes", l.layers[i].bytes).end_object();
  w.end_array();
}

void write_device_fields(JsonWriter& w, const DeviceMemory& d, bool reserved_recorded) {
  w.field("device", memory_device_name(d.device_type, d.device_id)).field("peak_allocated", d.peak_allocated)
      .field("peak_reserved", d.peak_reserved).field("peak_ns", d.peak_ts).field("peak_where", d.peak_where)
      .field("capacity", d.capacity).field("headroom", memory_headroom(d, reserved_recorded));
  write_categories(w, "at_peak", d.at_peak);
  write_layers(w, "at_peak_layers", d.at_peak, 10);
}

}  // namespace

int64_t memory_headroom(const DeviceMemory& d, bool reserved_recorded) {
  if (d.capacity <= 0) return -1;
  return d.capacity - (reserved_recorded ? d.peak_reserved : d.peak_allocated);
}

std::string memory_device_name(int8_t device_type, int16_t device_id) {
  if (device_type == 1) return "GPU " + std::to_string(device_id);
  if (device_type == 0) return "CPU";
  return strprintf("device %d:%d", device_type, device_id);
}

std::vector<std::string> live_memory_lines(const LiveMemory& l) {
  std::vector<std::string> lines;
  std::string cats;
  for (size_t c = 0; c < size_t(MemoryCategory::Count); ++c) {
    if (!l.bytes[c]) continue;
    if (!cats.empty()) cats += ", ";
    cats += memory_category_name(MemoryCategory(c));
    cats += " " + format_bytes(double(l.bytes[c]));
  }
  lines.push_back(cats.empty() ? "nothing" : cats);
  if (!l.split) {
    lines.push_back("(the trace records no addresses: what is alive cannot be told apart)");
    return lines;
  }
  if (l.before_trace > 0)
    lines.push_back(strprintf("%s allocated before the trace began, counted as %s%s", format_bytes(double(l.before_trace)).c_str(),
                              memory_category_name(l.before_trace_as),
                              l.before_trace_as == MemoryCategory::Weights ? " (the trace starts before the first iteration)"
                                                                           : " (training ran before the trace: what it is, is unknown)"));
  for (size_t i = 0; i < l.layers.size() && i < 5; ++i)
    lines.push_back(strprintf("allocated in %s: %s", l.layers[i].node == kNoNode ? "no layer" : l.layers[i].path.c_str(),
                              format_bytes(double(l.layers[i].bytes)).c_str()));
  return lines;
}

std::string memory_text(const MemoryUse& mu) {
  if (!mu.present) return "  memory: no [memory] events (profile_memory was off)\n";
  std::string o;
  for (const DeviceMemory& d : mu.devices) {
    const std::string reserved = mu.reserved_recorded ? "reserved " + format_bytes(double(d.peak_reserved)) : "reserved not recorded";
    o += strprintf("  memory %s: peak allocated %s (%s) at %s\n", memory_device_name(d.device_type, d.device_id).c_str(),
                   format_bytes(double(d.peak_allocated)).c_str(), reserved.c_str(), d.peak_where.empty() ? "?" : d.peak_where.c_str());
    if (int64_t h = memory_headroom(d, mu.reserved_recorded); h >= 0)
      o += strprintf("    the device has %s: headroom %s\n", format_bytes(double(d.capacity)).c_str(), format_bytes(double(h)).c_str());
    std::vector<std::string> lines = live_memory_lines(d.at_peak);
    for (size_t i = 0; i < lines.size(); ++i) o += (i ? "      " : "    alive at the peak: ") + lines[i] + "\n";
  }
  if (mu.totals_derived)
    o += "    totals are running sums of Bytes (the trace records no Total Allocated): memory held before it began counts only as far as its frees show\n";
  for (auto& p : mu.per_phase)
    o += strprintf("    %-15s allocates %s, frees %s\n", phase_name(p.phase), format_bytes(double(p.allocated)).c_str(), format_bytes(double(p.freed)).c_str());
  for (size_t i = 0; i < mu.top_layers.size() && i < 5; ++i)
    o += strprintf("    layer %s allocates %s (net %s)\n", mu.top_layers[i].path.c_str(), format_bytes(double(mu.top_layers[i].allocated)).c_str(),
                   format_bytes(double(mu.top_layers[i].net)).c_str());
  return o;
}

void write_live_memory_fields(JsonWriter& w, const TraceModel& m, const LiveMemory& l) {
  w.field("device", memory_device_name(l.device_type, l.device_id)).field("at_ns", l.at).field("allocated", l.allocated);
  write_categories(w, "by_category", l);
  write_layers(w, "layers", l, 20);
  w.key("allocations").begin_array();
  for (size_t i = 0; i < l.allocations.size() && i < 20; ++i) {
    const LiveMemory::Allocation& al = l.allocations[i];
    const EventId op = allocating_op(m, al.event);
    w.begin_object().field("bytes", m.memory.bytes[al.event]).field("at_ns", m.memory.ts[al.event])
        .field("category", memory_category_key(al.category)).field("op", op == kNoEvent ? std::string_view() : m.name_of(op))
        .end_object();
  }
  w.end_array();
}

std::string live_memory_text(const TraceModel& m, const LiveMemory& l) {
  std::string o = strprintf("%s at %s: %s allocated\n", memory_device_name(l.device_type, l.device_id).c_str(),
                            format_duration(l.at - m.time_begin).c_str(), format_bytes(double(l.allocated)).c_str());
  for (const std::string& line : live_memory_lines(l)) o += "  " + line + "\n";
  for (size_t i = 0; i < l.allocations.size() && i < 10; ++i) {
    const LiveMemory::Allocation& al = l.allocations[i];
    const EventId op = allocating_op(m, al.event);
    o += strprintf("  %10s %-15s by %s at %s\n", format_bytes(double(m.memory.bytes[al.event])).c_str(), memory_category_name(al.category),
                   op == kNoEvent ? "?" : std::string(m.name_of(op)).c_str(), format_duration(m.memory.ts[al.event] - m.time_begin).c_str());
  }
  return o;
}

void write_memory_fields(JsonWriter& w, const MemoryUse& mu) {
  w.field("present", mu.present).field("totals_derived", mu.totals_derived).field("reserved_recorded", mu.reserved_recorded)
      .field("addresses_recorded", mu.addresses_recorded);
  if (const DeviceMemory* d = mu.peak_device()) write_device_fields(w, *d, mu.reserved_recorded);
  if (mu.devices.size() > 1) {
    w.key("devices").begin_array();
    for (const DeviceMemory& d : mu.devices) {
      w.begin_object();
      write_device_fields(w, d, mu.reserved_recorded);
      w.end_object();
    }
    w.end_array();
  }
  w.key("per_phase").begin_array();
  for (auto& p : mu.per_phase)
    w.begin_object().field("phase", phase_name(p.phase)).field("allocated", p.allocated).field("freed", p.freed).end_object();
  w.end_array();
  w.key("top_layers").begin_array();
  for (auto& l : mu.top_layers) w.begin_object().field("path", l.path).field("allocated", l.allocated).field("net", l.net).end_object();
  w.end_array();
}

}  // namespace strata
