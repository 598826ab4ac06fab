// Event arguments from the JSON source (json_args.h).
#include "core/import/json_args.h"

#include "core/json_scan.h"
#include "core/trace_model.h"

#include <algorithm>
#include <charconv>
#include <string>

namespace strata {

namespace {

// How each argument is spelled in Kineto's JSON.
std::string_view key_of(Arg a) {
  switch (a) {
    case Arg::Stream: return "stream";
    case Arg::WaitOnStream: return "wait_on_stream";
    case Arg::WaitOnEventRecordCorrelation: return "wait_on_cuda_event_record_corr_id";
    case Arg::CollectiveName: return "Collective name";
    case Arg::InMsgNelems: return "In msg nelems";
    case Arg::Dtype: return "dtype";
    case Arg::ProcessGroupName: return "Process Group Name";
    case Arg::GroupSize: return "Group size";
    case Arg::Bytes: return "bytes";
  }
  return {};
}

// The number after `"key":` in an event's JSON (a string holding one counts too), or -1.
double number_at(std::string_view src, std::string_view key) {
  size_t p = src.find(key);
  if (p == std::string_view::npos || p == 0 || src[p - 1] != '"' || p + key.size() >= src.size() ||
      src[p + key.size()] != '"')
    return -1;
  size_t i = json::skip_ws(src.data(), p + key.size() + 1, src.size());
  if (i >= src.size() || src[i] != ':') return -1;
  i = json::skip_ws(src.data(), i + 1, src.size());
  if (i < src.size() && src[i] == '"') ++i;
  double v = -1;
  auto r = std::from_chars(src.data() + i, src.data() + src.size(), v);
  return r.ec == std::errc() && v >= 0 ? v : -1;
}

}  // namespace

std::string_view arg_text(std::string_view src, std::string_view key) {
  std::string quoted = "\"" + std::string(key) + "\"";
  size_t p = src.find(quoted);
  if (p == std::string_view::npos) return {};
  p = src.find(':', p + quoted.size());
  if (p == std::string_view::npos) return {};
  ++p;
  while (p < src.size() && (src[p] == ' ' || src[p] == '\t' || src[p] == '\n' || src[p] == '\r')) ++p;
  if (p >= src.size()) return {};
  if (src[p] == '"') {
    size_t e = src.find('"', p + 1);
    return e == std::string_view::npos ? std::string_view() : src.substr(p + 1, e - p - 1);
  }
  size_t e = p;
  while (e < src.size() && src[e] != ',' && src[e] != '}' && src[e] != ']') ++e;
  return src.substr(p, e - p);
}

int64_t arg_int(std::string_view src, std::string_view key) {
  std::string_view t = arg_text(src, key);
  int64_t v = -1;
  auto r = std::from_chars(t.data(), t.data() + t.size(), v);
  return r.ec == std::errc() ? v : -1;
}


// The shape of input `which` from an op's "Input Dims"; empty when not recorded.
std::vector<int64_t> input_shape_json(std::string_view src, int which) {
  size_t p = src.find("\"Input Dims\"");
  if (p == std::string_view::npos) return {};
  p = src.find('[', p);
  if (p == std::string_view::npos) return {};
  ++p;
  for (int k = 0;; ++k) {
    while (p < src.size() && src[p] != '[' && src[p] != ']') ++p;
    if (p >= src.size() || src[p] == ']') return {};  // fewer inputs
    size_t close = src.find(']', p);
    if (close == std::string_view::npos) return {};
    if (k == which) {
      std::vector<int64_t> dims;
      for (size_t q = p + 1; q < close;) {
        while (q < close && (src[q] == ' ' || src[q] == ',')) ++q;
        int64_t v = -1;
        auto r = std::from_chars(src.data() + q, src.data() + close, v);
        if (r.ec != std::errc()) break;
        dims.push_back(v);
        q = size_t(r.ptr - src.data());
      }
      return dims;
    }
    p = close + 1;
  }
}

namespace {

// Where the value of `"key":` starts in an event's JSON, or npos.
size_t value_start(std::string_view src, std::string_view key) {
  const std::string quoted = "\"" + std::string(key) + "\"";
  size_t p = src.find(quoted);
  if (p == std::string_view::npos) return p;
  size_t i = json::skip_ws(src.data(), p + quoted.size(), src.size());
  if (i >= src.size() || src[i] != ':') return std::string_view::npos;
  return json::skip_ws(src.data(), i + 1, src.size());
}

constexpr size_t kMalformed = std::string_view::npos;

// The elements of the JSON array at src[i] (its '['), each read by `element(at)`, which returns
// the index just past it or kMalformed. Returns the index just past the ']', or kMalformed.
template <class ReadElement>
size_t each_element(std::string_view src, size_t i, ReadElement&& element) {
  if (i >= src.size() || src[i] != '[') return kMalformed;
  for (++i;;) {
    i = json::skip_ws(src.data(), i, src.size());
    if (i >= src.size()) return kMalformed;
    if (src[i] == ']') return i + 1;
    if (src[i] == ',') {
      ++i;
      continue;
    }
    i = element(i);
    if (i == kMalformed) return kMalformed;
  }
}

// A flat array of integers at src[i]: the index past its ']', or kMalformed.
size_t read_ints(std::string_view src, size_t i, std::vector<int64_t>& out) {
  return each_element(src, i, [&](size_t at) {
    int64_t v = 0;
    auto r = std::from_chars(src.data() + at, src.data() + src.size(), v);
    if (r.ec != std::errc()) return kMalformed;
    out.push_back(v);
    return size_t(r.ptr - src.data());
  });
}

// "Input Dims" at src[i]: per input, a shape `[2, 3]` or a TensorList's shapes `[[2, 3], [4]]`.
// Empty when malformed.
std::vector<std::vector<std::vector<int64_t>>> read_dims(std::string_view src, size_t i) {
  std::vector<std::vector<std::vector<int64_t>>> out;
  const size_t end = each_element(src, i, [&](size_t at) {
    if (src[at] != '[') return kMalformed;
    auto& shapes = out.emplace_back();
    const size_t first = json::skip_ws(src.data(), at + 1, src.size());
    if (first >= src.size() || src[first] != '[') return read_ints(src, at, shapes.emplace_back());
    return each_element(src, at, [&](size_t tensor) {  // a TensorList: one shape per tensor
      return src[tensor] == '[' ? read_ints(src, tensor, shapes.emplace_back()) : kMalformed;
    });
  });
  if (end == kMalformed) return {};
  return out;
}

// An array of strings at src[i] ("Input type", "Concrete Inputs"); empty when malformed.
std::vector<std::string> read_strings(std::string_view src, size_t i) {
  std::vector<std::string> out;
  const size_t end = each_element(src, i, [&](size_t at) {
    if (src[at] != '"') return kMalformed;
    size_t e = at + 1;
    bool escaped = false;
    for (; e < src.size() && src[e] != '"'; ++e)
      if (src[e] == '\\') escaped = true, ++e;
    if (e >= src.size()) return kMalformed;
    std::string_view raw = src.substr(at + 1, e - at - 1);
    std::string& s = out.emplace_back();
    if (!escaped) s = raw;
    else if (!json::unescape(raw, s)) return kMalformed;
    return e + 1;
  });
  if (end == kMalformed) return {};
  return out;
}

}  // namespace

std::vector<OpInput> op_inputs_json(std::string_view src) {
  auto dims = read_dims(src, value_start(src, "Input Dims"));
  if (dims.empty()) return {};
  std::vector<std::string> types = read_strings(src, value_start(src, "Input type"));
  std::vector<std::string> values = read_strings(src, value_start(src, "Concrete Inputs"));
  std::vector<OpInput> out(std::max(dims.size(), types.size()));
  for (size_t k = 0; k < out.size(); ++k) {
    if (k < dims.size()) out[k].shapes = std::move(dims[k]);
    if (k < types.size()) out[k].type = std::move(types[k]);
    if (k < values.size()) out[k].value = std::move(values[k]);
  }
  return out;
}

ProfilerRangeCounters profiler_range_counters_json(std::string_view src) {
  // Per precision (double, single, half): add, mul, fma.
  static constexpr std::string_view kOps[3][3] = {
      {"smsp__sass_thread_inst_executed_op_dadd_pred_on.sum", "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum",
       "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum"},
      {"smsp__sass_thread_inst_executed_op_fadd_pred_on.sum", "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
       "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"},
      {"smsp__sass_thread_inst_executed_op_hadd_pred_on.sum", "smsp__sass_thread_inst_executed_op_hmul_pred_on.sum",
       "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum"}};
  ProfilerRangeCounters r;
  for (const auto& precision : kOps)
    for (int op = 0; op < 3; ++op) {
      double v = number_at(src, precision[op]);
      if (v < 0) continue;
      r.has_flop_counters = true;
      r.flops += op == 2 ? 2 * v : v;
    }
  double ns = number_at(src, "gpu__time_duration.sum");
  if (ns > 0 && ns < 9e18) r.measured = Ns(ns);
  return r;
}

int64_t JsonEventArgs::integer(EventId e, Arg a) const { return arg_int(m_.source_of(e), key_of(a)); }
std::string_view JsonEventArgs::text(EventId e, Arg a) const { return arg_text(m_.source_of(e), key_of(a)); }
std::vector<int64_t> JsonEventArgs::input_shape(EventId e, int which) const { return input_shape_json(m_.source_of(e), which); }
std::vector<OpInput> JsonEventArgs::op_inputs(EventId e) const { return op_inputs_json(m_.source_of(e)); }
ProfilerRangeCounters JsonEventArgs::counters(EventId e) const { return profiler_range_counters_json(m_.source_of(e)); }

}  // namespace strata
