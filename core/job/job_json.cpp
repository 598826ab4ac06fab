// A job's summary as JSON and text, and a rank's data as JSON and back (what a summary made
// anywhere carries so that `strata summary --merge` can build the job's summary from it).
#include "core/job/job.h"
#include "core/json_writer.h"
#include "core/text_format.h"

#include <simdjson.h>

#include <algorithm>
#include <cinttypes>
#include <map>

namespace strata {

namespace {

void write_parts(JsonWriter& w, const char* key, const std::vector<RankData::Part>& parts) {
  w.key(key).begin_array();
  for (const RankData::Part& p : parts) w.begin_array().value(uint64_t(p.name)).value(p.cpu).value(p.gpu).end_array();
  w.end_array();
}

template <size_t N>
void write_ns_array(JsonWriter& w, const char* key, const std::array<Ns, N>& a) {
  w.key(key).begin_array();
  for (Ns v : a) w.value(v);
  w.end_array();
}

double ms(Ns v) { return double(v) / 1e6; }

// A layer row's attributions: "bucket (gradient-ready order)", "overlap + next layer", ….
std::string attributions_text(uint8_t bits) {
  std::string o;
  for (size_t a = 0; a < size_t(CommAttribution::Count); ++a)
    if (bits >> a & 1) o += (o.empty() ? "" : " + ") + std::string(comm_attribution_name(CommAttribution(a)));
  return o;
}

}  // namespace

const char* comm_attribution_name(CommAttribution a) {
  switch (a) {
    case CommAttribution::Bucket: return "bucket (gradient-ready order)";
    case CommAttribution::Overlap: return "overlap";
    case CommAttribution::NextLayer: return "next layer";
    case CommAttribution::Phase: return "phase";
    case CommAttribution::Count: break;
  }
  return "?";
}

void write_rank_data(JsonWriter& w, const RankData& r) {
  w.begin_object();
  w.field("schema", "strata.rank/2").field("rank", r.rank).field("world_size", r.world_size).field("file", r.file);
  w.field("iter_mean_ns", r.iter_mean).field("iter_median_ns", r.iter_median).field("utilization", r.utilization);
  w.field("window_ns", r.window).field("compute_ns", r.compute).field("communication_ns", r.communication);
  w.field("overlap_ns", r.overlap);
  w.key("names").begin_array();
  for (const std::string& n : r.names) w.value(n);
  w.end_array();
  w.key("iterations").begin_array();
  for (const RankData::IterationTime& it : r.iterations)
    w.begin_array().value(it.step).value(it.begin).value(it.end).value(it.partial).end_array();
  w.end_array();
  w.key("phases").begin_array();
  for (const RankData::PhaseSpan& p : r.phases)
    w.begin_array().value(p.step).value(int64_t(p.phase)).value(p.begin).value(p.end).end_array();
  w.end_array();
  w.key("collectives").begin_array();
  for (const RankData::Collective& c : r.collectives) {
    w.begin_object();
    w.field("kind", uint64_t(c.kind)).field("group", uint64_t(c.group)).field("group_size", uint64_t(c.group_size));
    w.field("step", c.step).field("index", uint64_t(c.index)).field("launch", c.launch).field("start", c.start);
    w.field("end", c.end).field("bytes", c.bytes).field("phase", int64_t(c.phase)).field("exposed", c.exposed);
    w.key("layers").begin_array();
    for (const RankData::Collective::LayerShare& l : c.layers) w.begin_array().value(uint64_t(l.name)).value(l.share).end_array();
    w.end_array();
    w.field("attribution", comm_attribution_name(c.attribution)).field("estimated", c.estimated);
    const RankData::Breakdown& b = c.before;
    w.key("before").begin_object();
    write_ns_array(w, "phase_cpu", b.phase_cpu);
    write_ns_array(w, "phase_gpu", b.phase_gpu);
    write_ns_array(w, "idle", b.idle);
    w.field("gpu_compute", b.gpu_compute);
    write_parts(w, "layers", b.layers);
    write_parts(w, "kernels", b.kernels);
    w.end_object();
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

namespace {

namespace dom = simdjson::dom;

// Reads what it can; a wrong type or a missing key leaves `ok` false.
struct Reader {
  bool ok = true;
  int64_t i64(dom::element e) {
    int64_t v = 0;
    if (e.get(v)) ok = false;
    return v;
  }
  int64_t i64(dom::object o, const char* k) {
    dom::element e;
    if (o[k].get(e)) return ok = false, 0;
    return i64(e);
  }
  double f64(dom::object o, const char* k) {
    double v = 0;
    if (o[k].get(v)) ok = false;
    return v;
  }
  std::string str(dom::object o, const char* k) {
    std::string_view v;
    if (o[k].get(v)) ok = false;
    return std::string(v);
  }
  // f(element) for each element of the array at o[k] (a default dom::array must not be walked).
  template <class F>
  void each(dom::object o, const char* k, F&& f) {
    dom::array a;
    if (o[k].get(a)) {
      ok = false;
      return;
    }
    for (dom::element e : a) f(e);
  }
  template <size_t N>
  void ns_array(dom::object o, const char* k, std::array<Ns, N>& out) {
    size_t i = 0;
    each(o, k, [&](dom::element e) {
      if (i < N) out[i++] = i64(e);
    });
  }
  void parts(dom::object o, const char* k, std::vector<RankData::Part>& out, size_t names) {
    each(o, k, [&](dom::element e) {
      dom::array a;
      if (e.get(a) || a.size() != 3) {
        ok = false;
        return;
      }
      RankData::Part p{uint32_t(i64(a.at(0))), i64(a.at(1)), i64(a.at(2))};
      if (p.name >= names) ok = false;
      else out.push_back(p);
    });
  }
};

}  // namespace

Result<RankData> read_rank_data(std::string_view summary_json) {
  dom::parser parser;
  dom::element doc;
  if (auto err = parser.parse(summary_json.data(), summary_json.size()).get(doc))
    return Status::invalid(std::string("not JSON: ") + simdjson::error_message(err));
  dom::object root, o;
  if (doc.get(root) || root["rank_data"].get(o))
    return Status::not_found("no \"rank_data\" object (written by strata summary FILE --json)");
  Reader rd;
  if (rd.str(o, "schema") != "strata.rank/2")
    return Status::unsupported("rank_data is not schema strata.rank/2 (a summary by another version of strata: summarize the trace again)");
  RankData r;
  r.rank = rd.i64(o, "rank");
  r.world_size = rd.i64(o, "world_size");
  r.file = rd.str(o, "file");
  r.iter_mean = rd.i64(o, "iter_mean_ns");
  r.iter_median = rd.i64(o, "iter_median_ns");
  r.utilization = rd.f64(o, "utilization");
  r.window = rd.i64(o, "window_ns");
  r.compute = rd.i64(o, "compute_ns");
  r.communication = rd.i64(o, "communication_ns");
  r.overlap = rd.i64(o, "overlap_ns");
  rd.each(o, "names", [&](dom::element e) {
    std::string_view s;
    if (e.get(s)) rd.ok = false;
    r.names.emplace_back(s);
  });
  const size_t n = r.names.size();
  rd.each(o, "iterations", [&](dom::element e) {
    dom::array a;
    bool partial = false;
    if (e.get(a) || a.size() != 4 || a.at(3).get(partial)) {
      rd.ok = false;
      return;
    }
    r.iterations.push_back({rd.i64(a.at(0)), rd.i64(a.at(1)), rd.i64(a.at(2)), partial});
  });
  rd.each(o, "phases", [&](dom::element e) {
    dom::array a;
    if (e.get(a) || a.size() != 4) {
      rd.ok = false;
      return;
    }
    int64_t ph = rd.i64(a.at(1));
    if (ph < 0 || ph >= int64_t(PhaseKind::Count)) rd.ok = false;
    else r.phases.push_back({rd.i64(a.at(0)), PhaseKind(ph), rd.i64(a.at(2)), rd.i64(a.at(3))});
  });
  rd.each(o, "collectives", [&](dom::element e) {
    dom::object co, b;
    if (e.get(co) || co["before"].get(b)) {
      rd.ok = false;
      return;
    }
    RankData::Collective c;
    c.kind = uint32_t(rd.i64(co, "kind"));
    c.group = uint32_t(rd.i64(co, "group"));
    c.group_size = uint32_t(rd.i64(co, "group_size"));
    c.step = rd.i64(co, "step");
    c.index = uint32_t(rd.i64(co, "index"));
    c.launch = rd.i64(co, "launch");
    c.start = rd.i64(co, "start");
    c.end = rd.i64(co, "end");
    c.bytes = rd.i64(co, "bytes");
    int64_t ph = rd.i64(co, "phase");
    c.phase = ph >= 0 && ph < int64_t(PhaseKind::Count) ? PhaseKind(ph) : PhaseKind::Other;
    c.exposed = rd.i64(co, "exposed");
    rd.each(co, "layers", [&](dom::element l) {
      dom::array a;
      double share = 0;
      if (l.get(a) || a.size() != 2 || a.at(1).get(share)) {
        rd.ok = false;
        return;
      }
      int64_t v = rd.i64(a.at(0));
      if (v >= 0 && size_t(v) < n) c.layers.push_back({uint32_t(v), share});
      else rd.ok = false;
    });
    const std::string how = rd.str(co, "attribution");
    size_t a = 0;
    while (a < size_t(CommAttribution::Count) && how != comm_attribution_name(CommAttribution(a))) ++a;
    if (a == size_t(CommAttribution::Count)) rd.ok = false;
    else c.attribution = CommAttribution(a);
    if (co["estimated"].get(c.estimated)) rd.ok = false;
    rd.ns_array(b, "phase_cpu", c.before.phase_cpu);
    rd.ns_array(b, "phase_gpu", c.before.phase_gpu);
    rd.ns_array(b, "idle", c.before.idle);
    c.before.gpu_compute = rd.i64(b, "gpu_compute");
    rd.parts(b, "layers", c.before.layers, n);
    rd.parts(b, "kernels", c.before.kernels, n);
    if (c.kind >= n || c.group >= n) rd.ok = false;
    else r.collectives.push_back(std::move(c));
  });
  if (!rd.ok) return Status::invalid("rank_data is malformed (a key is missing or of the wrong type)");
  return r;
}

std::string rank_summary_json(const TraceModel& m, const Annotation& a, const RankData& r) {
  JsonWriter w;
  w.begin_object();
  write_summary_fields(w, m, a);
  w.key("rank_data");
  write_rank_data(w, r);
  w.end_object();
  return w.str() + "\n";
}

std::string job_summary_json(const std::vector<RankData>& ranks, const JobAnalysis& j) {
  JsonWriter w;
  w.begin_object();
  w.field("schema", "strata.job/1").field("world_size", int64_t(ranks.size()));
  w.key("clock_alignment").begin_object().field("reference_rank", j.reference_rank)
      .field("method", "median difference of shared collectives' ends").field("collectives", j.aligned_by).end_object();
  w.key("ranks").begin_array();
  for (size_t i = 0; i < ranks.size(); ++i) {
    const RankData& r = ranks[i];
    w.begin_object().field("rank", r.rank).field("file", r.file).field("clock_offset_ns", j.clock_offset[i]);
    w.key("iterations").begin_object().field("count", uint64_t(r.iterations.size())).field("mean_ns", r.iter_mean)
        .field("median_ns", r.iter_median);
    w.key("list").begin_array();
    for (const RankData::IterationTime& it : r.iterations)
      w.begin_object().field("step", it.step).field("time_ns", it.end - it.begin).field("partial", it.partial).end_object();
    w.end_array().end_object();
    w.field("utilization", r.utilization).field("compute_ns", r.compute).field("communication_ns", r.communication);
    w.field("compute_communication_overlap_ns", r.overlap).field("collectives", uint64_t(r.collectives.size()));
    w.end_object();
  }
  w.end_array();
  w.key("stragglers").begin_array();
  for (const JobAnalysis::Straggler& s : j.stragglers) {
    const JobAnalysis::Instance& inst = j.instances[s.instance];
    w.begin_object().field("rank", s.rank).field("step", s.step).field("delay_ms", ms(s.delay)).field("cause", s.cause);
    w.field("phase", s.phase).field("layer", s.layer).field("kernel", s.kernel);
    w.key("collective").begin_object().field("kind", inst.kind).field("group", inst.group).field("index", uint64_t(inst.index));
    w.key("waits_ns").begin_array();
    for (const auto& mb : inst.members) w.begin_object().field("rank", ranks[mb.rank].rank).field("wait_ns", mb.wait).end_object();
    w.end_array().end_object();
    w.end_object();
  }
  w.end_array();
  w.key("communication").begin_object();
  auto comm = [&](const char* key, const char* name_key, const std::vector<JobAnalysis::Comm>& list) {
    w.key(key).begin_array();
    for (const JobAnalysis::Comm& c : list) {
      w.begin_object().field(name_key, c.name).field("collectives", c.count).field("bytes", c.bytes).field("time_ns", c.time)
          .field("exposed_ns", c.exposed);
      if (c.attributions) w.field("attribution", attributions_text(c.attributions)).field("estimated", c.estimated);
      w.end_object();
    }
    w.end_array();
  };
  comm("layers", "layer", j.comm_layers);
  comm("kinds", "kind", j.comm_kinds);
  comm("phases", "phase", j.comm_phases);
  w.end_object();
  w.key("notes").begin_array();
  for (const std::string& n : j.notes) w.value(n);
  w.end_array();
  w.end_object();
  return w.str() + "\n";
}

std::string job_summary_text(const std::vector<RankData>& ranks, const JobAnalysis& j) {
  std::string o = strprintf("job of %zu ranks (clocks aligned to rank %" PRId64 " by %" PRIu64 " shared collectives)\n",
                            ranks.size(), j.reference_rank, j.aligned_by);
  o += "  rank  iterations  median      mean        GPU busy  compute     communication (overlapped)  clock offset\n";
  for (size_t i = 0; i < ranks.size(); ++i) {
    const RankData& r = ranks[i];
    o += strprintf("  %4" PRId64 "  %10zu  %-10s  %-10s  %7.1f%%  %-10s  %-10s (%s)  %s\n", r.rank, r.iterations.size(),
                   format_duration(r.iter_median).c_str(), format_duration(r.iter_mean).c_str(), 100 * r.utilization,
                   format_duration(r.compute).c_str(), format_duration(r.communication).c_str(),
                   format_duration(r.overlap).c_str(), format_duration(j.clock_offset[i]).c_str());
  }
  // Iteration times per step, a column per rank.
  std::map<int64_t, std::vector<Ns>> steps;
  for (size_t i = 0; i < ranks.size(); ++i)
    for (const RankData::IterationTime& it : ranks[i].iterations) {
      auto& row = steps[it.step];
      row.resize(ranks.size(), -1);
      row[i] = it.end - it.begin;
    }
  if (!steps.empty() && ranks.size() <= 16) {
    o += "  iteration time per rank (ms):\n    step";
    for (const RankData& r : ranks) o += strprintf(" %8" PRId64, r.rank);
    o += "\n";
    for (auto& [step, row] : steps) {
      o += strprintf("    %4" PRId64, step);
      for (Ns t : row) o += t < 0 ? "        -" : strprintf(" %8.2f", ms(t));
      o += "\n";
    }
  }
  if (j.stragglers.empty()) o += "  stragglers: none (no rank kept the others waiting for more than noise)\n";
  for (const JobAnalysis::Straggler& s : j.stragglers) {
    const JobAnalysis::Instance& inst = j.instances[s.instance];
    o += strprintf("  straggler: rank %" PRId64 " in step %" PRId64 " made the others wait %s at %s #%u; its time went to %s",
                   s.rank, s.step, format_duration(s.delay).c_str(), inst.kind.c_str(), inst.index, s.cause.c_str());
    if (!s.phase.empty()) o += " in " + s.phase;
    if (!s.layer.empty()) o += ", layer " + s.layer;
    if (!s.kernel.empty()) o += ", kernel " + (s.kernel.size() > 60 ? s.kernel.substr(0, 57) + "..." : s.kernel);
    o += "\n";
  }
  if (!j.comm_kinds.empty()) {
    o += "  communication per rank, by kind:\n";
    for (const JobAnalysis::Comm& c : j.comm_kinds)
      o += strprintf("    %-14s %5" PRIu64 "x  %10s, exposed (not hidden by compute) %s\n", c.name.c_str(), c.count,
                     format_duration(c.time).c_str(), format_duration(c.exposed).c_str());
    o += "  communication per rank, by layer (top 10), and how it was charged:\n";
    bool estimated = false;
    for (size_t i = 0; i < j.comm_layers.size() && i < 10; ++i) {
      const JobAnalysis::Comm& c = j.comm_layers[i];
      o += strprintf("    %-60s %10s, exposed %-10s  %s%s\n",
                     c.name.size() > 60 ? ("..." + c.name.substr(c.name.size() - 57)).c_str() : c.name.c_str(),
                     format_duration(c.time).c_str(), format_duration(c.exposed).c_str(), attributions_text(c.attributions).c_str(),
                     c.estimated ? ", estimated" : "");
      estimated |= c.estimated;
    }
    if (estimated) o += "    (estimated: a bucket of several layers, shared by their backward GPU time)\n";
  }
  for (const std::string& n : j.notes) o += "  note: " + n + "\n";
  return o;
}

}  // namespace strata
