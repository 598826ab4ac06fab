#include "core/trace_info.h"

#include "core/json_writer.h"
#include "core/text_format.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

namespace strata {

StepInfo profiler_steps(const TraceModel& m) {
  StepInfo s;
  for (EventId e = 0; e < m.ev.size(); ++e) {
    if (m.is_profiler_step(e)) s.steps.push_back(e);
  }
  std::sort(s.steps.begin(), s.steps.end(), [&](EventId a, EventId b) { return m.ev.start[a] < m.ev.start[b]; });
  if (!s.steps.empty()) {
    s.min_ns = INT64_MAX;
    Ns sum = 0;
    for (EventId e : s.steps) {
      sum += m.ev.dur[e];
      s.min_ns = std::min(s.min_ns, m.ev.dur[e]);
      s.max_ns = std::max(s.max_ns, m.ev.dur[e]);
    }
    s.mean_ns = sum / Ns(s.steps.size());
  }
  return s;
}

namespace {

std::string process_title(const TraceModel& m, const Process& p) {
  std::string s = p.pid_label != kNoStr ? std::string(m.strings.view(p.pid_label)) : "pid " + std::to_string(p.pid);
  if (p.device >= 0) {
    std::string_view word = device_word_of_label(m.strings.view(p.labels));  // "NPU", "MTIA", …
    s = std::string(word.empty() ? "GPU" : word) + " " + std::to_string(p.device) + " (" + s + ")";
  }
  if (p.name != kNoStr) s += " " + std::string(m.strings.view(p.name));
  return s;
}

const char* kind_name(TrackKind k) {
  return k == TrackKind::CpuThread ? "cpu_thread" : k == TrackKind::GpuStream ? "gpu_stream" : "other";
}

double per_second(double amount, double seconds) { return seconds > 0 ? amount / seconds : 0; }

}  // namespace

std::string info_text(const TraceModel& m) {
  const LoadStats& st = m.stats;
  std::string out;
  out += m.path + "\n";
  size_t used_tracks = std::count_if(m.tracks.begin(), m.tracks.end(), [](const Track& t) { return !t.events.empty(); });
  if (!st.importer.empty()) out += "  read as " + std::string(st.importer) + "\n";
  out += strprintf("  %" PRIu64 " traceEvents entries, %zu timed events on %zu tracks, span %s\n", st.trace_events,
                m.ev.size(), used_tracks, format_duration(m.time_end - m.time_begin).c_str());
  out += "  phases:";
  static const char* phase_names[] = {"X", "i", "C", "s", "t", "f", "M", "B", "E", "other"};
  for (size_t p = 0; p < std::size(st.per_phase); ++p)
    if (st.per_phase[p]) out += strprintf(" %s=%" PRIu64, phase_names[p], st.per_phase[p]);
  out += "\n  categories:";
  for (size_t c = 0; c < st.per_category.size(); ++c)
    if (st.per_category[c]) out += strprintf(" %s=%" PRIu64, m.category_names[c].c_str(), st.per_category[c]);
  out += "\n";
  StepInfo steps = profiler_steps(m);
  if (!steps.steps.empty())
    out += strprintf("  ProfilerSteps: %zu (%s .. %s), mean %s, min %s, max %s\n", steps.steps.size(),
                  std::string(m.name_of(steps.steps.front())).c_str(), std::string(m.name_of(steps.steps.back())).c_str(),
                  format_duration(steps.mean_ns).c_str(), format_duration(steps.min_ns).c_str(), format_duration(steps.max_ns).c_str());
  else
    out += "  ProfilerSteps: none\n";
  for (const DeviceInfo& d : m.devices)
    out += strprintf("  device %" PRId64 ": %s, %.1f GiB, sm_%" PRId64 "%" PRId64 ", %" PRId64 " SMs\n", d.id, d.name.c_str(),
                  double(d.total_global_mem) / double(1ull << 30), d.compute_major, d.compute_minor, d.num_sms);
  if (m.distributed.world_size > 0)
    out += strprintf("  distributed: rank %" PRId64 " of %" PRId64 " (%s)\n", m.distributed.rank, m.distributed.world_size,
                  m.distributed.backend.c_str());
  out += "  tracks:\n";
  std::vector<uint32_t> events_of_process(m.processes.size());
  for (const Track& t : m.tracks) events_of_process[t.process] += t.events.size();
  for (uint32_t pi = 0; pi < m.processes.size(); ++pi) {
    const Process& p = m.processes[pi];
    if (events_of_process[pi] == 0) continue;  // PyTorch names every GPU, used or not
    out += "    " + process_title(m, p) + "\n";
    for (const Track& t : m.tracks) {
      if (t.process != pi || t.events.empty()) continue;
      out += strprintf("      %-28s %9u events, depth %zu\n", std::string(m.strings.view(t.name)).c_str(), t.events.size(),
                    t.levels.size());
    }
  }
  out += strprintf("  links: %" PRIu64 "/%" PRIu64 " GPU ops linked to their launch; flows %" PRIu64 "/%" PRIu64
                " resolved, %" PRIu64 " flow events unmatched; %" PRIu64 " forward/backward pairs\n",
                st.gpu_ops_linked, st.gpu_ops, st.flows_resolved, st.flows_total, st.flow_events_unmatched,
                st.fwdbwd_pairs);
  if (m.memory.size()) {
    int64_t peak = 0;
    for (int64_t v : m.memory.total_allocated) peak = std::max(peak, v);
    out += strprintf("  memory: %zu allocator events, peak allocated %.1f MiB\n", m.memory.size(), double(peak) / 1048576.0);
  }
  if (!m.counters.empty()) out += strprintf("  counters: %zu series\n", m.counters.size());
  out += strprintf("  warnings: %" PRIu64 "\n", m.warning_count);
  for (const std::string& w : m.warnings) out += "    " + w + "\n";
  double mb = double(st.json_bytes) / 1e6;
  out += strprintf("  load: %.3f s (read %.3f, parse %.3f, build %.3f), %.1f MB JSON at %.0f MB/s, %.2f M events/s, "
                "model %.1f bytes/event, peak RSS %.0f MB\n",
                st.seconds_total, st.seconds_read, st.seconds_parse, st.seconds_build, mb,
                per_second(mb, st.seconds_total), per_second(double(st.trace_events) / 1e6, st.seconds_total),
                st.trace_events ? double(st.model_bytes) / double(st.trace_events) : 0.0,
                double(st.peak_rss_bytes) / 1e6);
  return out;
}

std::string info_json(const TraceModel& m) {
  const LoadStats& st = m.stats;
  JsonWriter w;
  w.begin_object();
  w.field("file", m.path).field("importer", st.importer).field("trace_events", st.trace_events).field("timed_events", uint64_t(m.ev.size()));
  w.field("time_begin_ns", m.time_begin).field("time_end_ns", m.time_end).field("span_ns", m.time_end - m.time_begin);
  w.field("schema_version", m.schema_version).field("display_time_unit", m.display_time_unit);
  w.field("base_time_ns", m.base_time_ns);
  static const char* phase_names[] = {"X", "i", "C", "s", "t", "f", "M", "B", "E", "other"};
  w.key("phases").begin_object();
  for (size_t p = 0; p < std::size(st.per_phase); ++p)
    if (st.per_phase[p]) w.field(phase_names[p], st.per_phase[p]);
  w.end_object();
  w.key("categories").begin_object();
  for (size_t c = 0; c < st.per_category.size(); ++c)
    if (st.per_category[c]) w.field(m.category_names[c], st.per_category[c]);
  w.end_object();
  StepInfo steps = profiler_steps(m);
  w.key("profiler_steps").begin_object().field("count", uint64_t(steps.steps.size()));
  w.field("mean_ns", steps.mean_ns).field("min_ns", steps.min_ns).field("max_ns", steps.max_ns);
  w.key("names").begin_array();
  for (EventId e : steps.steps) w.value(m.name_of(e));
  w.end_array().end_object();
  w.key("devices").begin_array();
  for (const DeviceInfo& d : m.devices)
    w.begin_object().field("id", d.id).field("name", d.name).field("total_global_mem", d.total_global_mem)
        .field("compute_major", d.compute_major).field("compute_minor", d.compute_minor).field("num_sms", d.num_sms)
        .end_object();
  w.end_array();
  w.key("distributed").begin_object().field("backend", m.distributed.backend).field("rank", m.distributed.rank)
      .field("world_size", m.distributed.world_size).end_object();
  w.key("processes").begin_array();
  for (uint32_t pi = 0; pi < m.processes.size(); ++pi) {
    const Process& p = m.processes[pi];
    w.begin_object().field("pid", p.pid);
    if (p.pid_label != kNoStr) w.field("pid_label", m.strings.view(p.pid_label));
    w.field("name", m.strings.view(p.name)).field("labels", m.strings.view(p.labels)).field("device", int64_t(p.device));
    w.key("tracks").begin_array();
    for (const Track& t : m.tracks) {
      if (t.process != pi) continue;
      w.begin_object().field("kind", kind_name(t.kind)).field("tid", t.tid).field("name", m.strings.view(t.name));
      if (t.kind == TrackKind::GpuStream) w.field("stream", t.stream);
      w.field("events", uint64_t(t.events.size())).field("depth", uint64_t(t.levels.size()));
      w.field("overflow_of", t.overflow_of == kNoTrack ? int64_t(-1) : int64_t(t.overflow_of));
      w.end_object();
    }
    w.end_array().end_object();
  }
  w.end_array();
  w.key("links").begin_object().field("gpu_ops", st.gpu_ops).field("gpu_ops_linked", st.gpu_ops_linked)
      .field("launches_linked", st.launches_linked).field("flows", st.flows_total).field("flows_resolved", st.flows_resolved)
      .field("flow_events_unmatched", st.flow_events_unmatched).field("fwdbwd_pairs", st.fwdbwd_pairs).end_object();
  int64_t peak = 0;
  for (int64_t v : m.memory.total_allocated) peak = std::max(peak, v);
  w.key("memory").begin_object().field("events", uint64_t(m.memory.size())).field("peak_allocated", peak).end_object();
  w.field("counter_series", uint64_t(m.counters.size()));
  w.field("overlapping_events", st.overlaps);
  w.field("warning_count", m.warning_count);
  w.key("warnings").begin_array();
  for (const std::string& s : m.warnings) w.value(s);
  w.end_array();
  w.key("load").begin_object().field("file_bytes", st.file_bytes).field("json_bytes", st.json_bytes)
      .field("seconds", st.seconds_total).field("seconds_read", st.seconds_read).field("seconds_parse", st.seconds_parse)
      .field("seconds_build", st.seconds_build).field("mb_per_s", per_second(double(st.json_bytes) / 1e6, st.seconds_total))
      .field("events_per_s", per_second(double(st.trace_events), st.seconds_total))
      .field("model_bytes", uint64_t(st.model_bytes))
      .field("model_bytes_per_event", st.trace_events ? double(st.model_bytes) / double(st.trace_events) : 0.0)
      .field("peak_rss_bytes", st.peak_rss_bytes).end_object();
  w.end_object();
  return w.str() + "\n";
}

}  // namespace strata
