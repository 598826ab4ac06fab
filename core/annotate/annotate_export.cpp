// `strata annotate`: the original trace bytes with `args["strata.path"]` added to every GPU
// event, plus the annotation tiers as X events (cat strata.iteration / strata.phase /
// strata.layer) on a process of their own. Opens in Perfetto and chrome://tracing.
#include "core/annotate/annotation.h"
#include "core/base/json_escape.h"
#include "core/base/output_file.h"
#include "core/base/us_text.h"
#include "core/json_scan.h"

#include <algorithm>
#include <cstdio>

namespace strata {

namespace {

// Where the annotated trace goes: a string, or a plain or gzip file.
class Sink {
 public:
  explicit Sink(std::string* s) : str_(s) {}
  explicit Sink(OutputFile* f) : file_(f) {}
  void put(std::string_view s) {
    if (str_) str_->append(s);
    else file_->write(s);
  }

 private:
  std::string* str_ = nullptr;
  OutputFile* file_ = nullptr;
};

// Inside an object starting at p[o] ('{'): where the "args" object's closing brace is, or
// npos; `obj_end` is one past the object.
size_t find_args_close(const char* p, size_t o, size_t obj_end, bool& args_empty) {
  size_t i = o + 1;
  while (true) {
    i = json::skip_ws(p, i, obj_end);
    if (i >= obj_end || p[i] != '"') return std::string::npos;
    size_t ks = i + 1, ke = ks;
    while (ke < obj_end && p[ke] != '"') ke += p[ke] == '\\' ? 2 : 1;
    std::string_view key(p + ks, ke - ks);
    i = json::skip_ws(p, ke + 1, obj_end);
    if (i >= obj_end || p[i] != ':') return std::string::npos;
    i = json::skip_ws(p, i + 1, obj_end);
    size_t ve;
    if (json::value_end(p, i, obj_end, ve) != json::ScanError::None) return std::string::npos;
    if (key == "args" && p[i] == '{') {
      args_empty = json::skip_ws(p, i + 1, ve) == ve - 1;
      return ve - 1;
    }
    i = json::skip_ws(p, ve, obj_end);
    if (i < obj_end && p[i] == ',') ++i;
    else return std::string::npos;
  }
}

std::string quoted(std::string_view s) {
  std::string q = "\"";
  append_json_escaped(q, s);
  q += '"';
  return q;
}

// A file's own failure is its sticky status, read once it is closed.
Status write_all(const TraceModel& m, const Annotation& a, Sink& out) {
  if (!m.source) return Status::not_found("the trace's source bytes are not available");
  const char* p = m.source->data();
  size_t n = m.source->size();
  size_t i = json::skip_ws(p, 0, n);
  size_t arr = std::string::npos;
  if (i < n && p[i] == '[') {
    arr = i;
  } else {
    size_t k = std::string_view(p, n).find("\"traceEvents\"");
    if (k != std::string_view::npos) {
      k = json::skip_ws(p, k + 13, n);
      if (k < n && p[k] == ':') k = json::skip_ws(p, k + 1, n);
      if (k < n && p[k] == '[') arr = k;
    }
  }
  size_t arr_end = 0;
  if (arr == std::string::npos || json::value_end(p, arr, n, arr_end) != json::ScanError::None)
    return Status::invalid("could not find the traceEvents array in " + m.path);
  bool any_event = json::skip_ws(p, arr + 1, n) < arr_end - 1;
  // GPU events to patch, in file order.
  std::vector<std::pair<uint64_t, EventId>> patch;
  for (EventId e = 0; e < m.ev.size(); ++e) {
    if (!is_gpu_cat(m.ev.category(e)) || e >= a.node_of_event.size() || a.node_of_event[e] == kNoNode) continue;
    patch.emplace_back(m.ev.source_offset[e], e);
  }
  std::sort(patch.begin(), patch.end());
  size_t pos = 0;
  for (auto& [off, e] : patch) {
    if (off < pos || off >= arr_end || p[off] != '{') continue;
    size_t oe;
    if (json::value_end(p, off, n, oe) != json::ScanError::None) continue;
    std::string path = quoted(a.tree.path(a.node_of_event[e]) + "/" + std::string(m.name_of(e)));
    bool empty = false;
    size_t close = find_args_close(p, off, oe, empty);
    if (close != std::string::npos) {
      out.put({p + pos, close - pos});
      out.put(empty ? "\"strata.path\":" : ",\"strata.path\":");
      out.put(path);
      pos = close;
    } else {
      out.put({p + pos, oe - 1 - pos});
      out.put(",\"args\":{\"strata.path\":");
      out.put(path);
      out.put("}");
      pos = oe - 1;
    }
  }
  out.put({p + pos, arr_end - 1 - pos});
  // The annotation tiers.
  int64_t pid = 0;
  for (auto& pr : m.processes) pid = std::max(pid, pr.pid);
  pid += 1;
  std::string ps = std::to_string(pid);
  bool first = !any_event;
  auto event = [&](const std::string& body) {
    out.put(first ? "\n" : ",\n");
    first = false;
    out.put(body);
  };
  auto meta = [&](const char* what, int tid, const std::string& arg) {
    event("{\"ph\":\"M\",\"name\":\"" + std::string(what) + "\",\"pid\":" + ps + ",\"tid\":" + std::to_string(tid) +
          ",\"args\":" + arg + "}");
  };
  meta("process_name", 0, "{\"name\":\"Strata annotations\"}");
  meta("process_sort_index", 0, "{\"sort_index\":-1}");
  static const char* threads[] = {"", "Iterations", "Phases", "Layers (forward)", "Layers (backward)", "Layers (other)"};
  for (int t = 1; t <= 5; ++t) {
    meta("thread_name", t, std::string("{\"name\":\"") + threads[t] + "\"}");
    meta("thread_sort_index", t, "{\"sort_index\":" + std::to_string(t) + "}");
  }
  const AnnotationTree& t = a.tree;
  Ns base = m.base_time_ns;
  for (NodeId x = 0; x < t.size(); ++x) {
    NodeKind k = t.kind[x];
    if (k != NodeKind::Iteration && k != NodeKind::Phase && k != NodeKind::Layer) continue;
    int tid = k == NodeKind::Iteration ? 1 : k == NodeKind::Phase ? 2
              : t.phase[x] == PhaseKind::Forward ? 3 : t.phase[x] == PhaseKind::Backward ? 4 : 5;
    const char* cat = k == NodeKind::Iteration ? "strata.iteration" : k == NodeKind::Phase ? "strata.phase" : "strata.layer";
    char metrics[256];
    std::snprintf(metrics, sizeof metrics,
                  ",\"gpu_busy_us\":%.3f,\"gpu_span_us\":%.3f,\"kernels\":%u,\"share\":%.4f,\"bound\":\"%s\"",
                  double(t.gpu_busy[x]) / 1e3, double(t.gpu_end[x] - t.gpu_begin[x]) / 1e3, t.kernels[x],
                  double(t.share[x]), bound_name(t.bound[x]));
    event("{\"ph\":\"X\",\"cat\":\"" + std::string(cat) + "\",\"name\":" + quoted(t.name_of(x)) + ",\"pid\":" + ps +
          ",\"tid\":" + std::to_string(tid) + ",\"ts\":" + us_text(t.begin[x] - base) + ",\"dur\":" + us_text(t.duration(x)) +
          ",\"args\":{\"strata.path\":" + quoted(t.path(x)) + metrics + "}}");
  }
  out.put("\n");
  out.put({p + arr_end - 1, n - (arr_end - 1)});
  return Status::ok();
}

}  // namespace

Result<std::string> annotated_trace_json(const TraceModel& m, const Annotation& a) {
  std::string s;
  Sink sink(&s);
  if (Status st = write_all(m, a, sink); !st.is_ok()) return st;
  return s;
}

Status write_annotated_trace(const TraceModel& m, const Annotation& a, const std::string& out_path) {
  OutputFile file;
  if (!file.open(out_path, {})) return file.status();
  Sink sink(&file);
  Status st = write_all(m, a, sink);
  const bool closed = file.close();
  if (!st.is_ok()) return st;
  return closed ? Status::ok() : file.status();
}

}  // namespace strata
