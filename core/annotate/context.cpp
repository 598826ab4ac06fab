// Structure shared by every pass: parents, op roots, track roles, the GPU ops in time order.
#include "core/annotate/internal.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>

namespace strata::annot {

std::string lower(std::string_view s) {
  std::string o(s);
  for (char& ch : o) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return o;
}

std::string_view strip_prefix(std::string_view s, std::string_view p) {
  return s.starts_with(p) ? s.substr(p.size()) : s;
}

static bool contains(std::string_view s, std::string_view needle) { return s.find(needle) != std::string_view::npos; }

static std::string_view aten_name(std::string_view n) {
  n = strip_prefix(n, "aten::");
  return n;
}

EventId outer_module_of(const Context& c, EventId e) {
  EventId found = kNoEvent;
  for (EventId p = c.parent[e]; p != kNoEvent; p = c.parent[p])
    if (c.cat(p) == Cat::PythonFunction && is_module_frame_name(c.name(p))) found = p;
  return found;
}

std::vector<EventId> child_ops(const Context& c, EventId r) {
  std::vector<EventId> out;
  const Track& tr = c.m.tracks[c.m.track_of(r)];
  size_t d = size_t(c.m.ev.depth[r]) + 1;
  if (d >= tr.levels.size()) return out;
  const IndexRange& lv = tr.levels[d];
  auto& st = c.m.ev.start;
  auto it = std::lower_bound(st.begin() + lv.begin, st.begin() + lv.end, st[r]);
  for (auto e = EventId(it - st.begin()); e < lv.end && st[e] < c.m.ev.end(r); ++e)
    if (c.parent[e] == r && (c.flags[e] & Context::kOp)) out.push_back(e);
  return out;
}

bool is_loss_op(std::string_view n) {
  n = aten_name(n);
  return contains(n, "loss") || n.starts_with("binary_cross_entropy") || n == "kl_div" ||
         n.starts_with("cross_entropy");
}

bool is_factory_op(std::string_view n) {
  static constexpr std::array<std::string_view, 10> names = {"full",      "ones",       "zeros",     "arange",    "scalar_tensor",
                                                             "full_like", "ones_like",  "zeros_like", "lift_fresh", "tensor"};
  if (!n.starts_with("aten::")) return false;
  n = aten_name(n);
  return std::find(names.begin(), names.end(), n) != names.end();
}

bool is_gather_op(std::string_view n) {
  return n == "aten::index_select" || n == "aten::gather" || n == "aten::index" || n == "aten::take_along_dim";
}

bool is_data_movement(std::string_view n) {
  static constexpr std::array<std::string_view, 22> names = {
      "to",    "_to_copy", "copy_",  "lift_fresh", "view",      "pin_memory", "_pin_memory", "contiguous",
      "empty", "empty_strided", "detach", "alias", "select", "slice",  "reshape",  "unsqueeze", "squeeze",
      "stack", "cat",   "as_strided", "record_stream", "set_"};
  if (!n.starts_with("aten::")) return false;
  n = aten_name(n);
  return std::find(names.begin(), names.end(), n) != names.end();
}

bool is_parametric(std::string_view n) {
  n = aten_name(n);
  static constexpr std::array<std::string_view, 16> keys = {
      "conv", "linear", "addmm", "matmul", "mm", "bmm", "baddbmm", "einsum", "embedding", "batch_norm",
      "layer_norm", "group_norm", "lstm", "gru", "attention", "rms_norm"};
  for (std::string_view k : keys)
    if (n.starts_with(k) || (k.size() > 3 && contains(n, k))) return true;
  return false;
}

bool is_optimizer_like(std::string_view n) {
  if (n.starts_with("aten::_foreach_") || n.starts_with("aten::_fused_")) return true;
  static constexpr std::array<std::string_view, 7> names = {"add_", "mul_", "addcdiv_", "addcmul_", "lerp_", "sqrt", "div_"};
  n = aten_name(n);
  return std::find(names.begin(), names.end(), n) != names.end();
}

bool is_backward_name(std::string_view n) {
  if (n.starts_with("autograd::engine::evaluate_function")) return true;
  if (n.starts_with("torch::autograd::")) return true;
  // "ConvolutionBackward0", "CudnnConvolutionBackward"
  size_t p = n.rfind("Backward");
  if (p == std::string_view::npos || n.starts_with("aten::")) return false;
  for (size_t i = p + 8; i < n.size(); ++i)
    if (n[i] < '0' || n[i] > '9') return false;
  return true;
}

bool is_sync_call(std::string_view n) {
  return host_wait_of(n) != HostWait::None || n == "aten::item" || n == "aten::_local_scalar_dense";
}

std::string_view op_kind(std::string_view n) {
  n = strip_prefix(n, "autograd::engine::evaluate_function: ");
  n = aten_name(n);
  std::string_view s = n;
  // Backward spellings: "ConvolutionBackward0", "CudnnBatchNormBackward0".
  size_t p = s.rfind("Backward");
  bool backward = p != std::string_view::npos && p > 0;
  if (backward) s = s.substr(0, p);
  auto has = [&](std::string_view k) {
    for (size_t i = 0; i + k.size() <= s.size(); ++i) {
      bool eq = true;
      for (size_t j = 0; j < k.size() && eq; ++j) {
        char a = s[i + j];
        if (a >= 'A' && a <= 'Z') a = char(a - 'A' + 'a');
        eq = a == k[j];
      }
      if (eq) return true;
    }
    return false;
  };
  if (has("accumulategrad")) return "accumulate_grad";
  if (has("conv")) return "conv";
  if (has("batchnorm") || has("batch_norm")) return "batch_norm";
  if (has("layernorm") || has("layer_norm")) return "layer_norm";
  if (has("groupnorm") || has("group_norm")) return "group_norm";
  if (has("instancenorm") || has("instance_norm")) return "instance_norm";
  if (has("embedding")) return "embedding";
  if (has("attention") || has("sdpa")) return "attention";
  if (has("loss")) return "loss";
  if (has("logsoftmax") || has("log_softmax") || has("softmax")) return "softmax";
  if (has("dropout")) return "dropout";
  if (has("pool")) return "pool";
  if (has("relu") || has("threshold") || has("gelu") || has("silu") || has("sigmoid") || has("tanh") ||
      has("hardtanh") || has("elu") || has("glu") || has("hardswish") || has("mish") || has("softplus"))
    return "activation";
  if (has("upsample") || has("interpolate")) return "upsample";  // upsample_bilinear2d is no linear
  if (has("baddbmm") || has("bmm")) return "bmm";
  if (has("addmm") || has("linear") || has("matmul") || s == "mm" || s == "Mm" || has("einsum")) return "linear";
  if (s == "t" || s == "T" || has("transpose") || has("permute") || has("view") || has("reshape") || has("expand") ||
      has("unsafe") || has("squeeze") || has("select") || has("slice") || has("contiguous") || has("clone"))
    return "reshape";
  if (has("add") || has("sub")) return "add";
  if (has("mul") || has("div")) return "mul";
  if (has("mean") || has("sum")) return "reduce";
  if (has("cat") || has("stack")) return "cat";
  return "other";
}

namespace {

void compute_parents(Context& c) {
  const TraceModel& m = c.m;
  size_t n = m.ev.size();
  c.parent.assign(n, kNoEvent);
  c.flags.assign(n, 0);
  parallel_for(c.threads, m.tracks.size(), [&](size_t ti) {
    const Track& t = m.tracks[ti];
    for (size_t d = 1; d < t.levels.size(); ++d) {
      const IndexRange& up = t.levels[d - 1];
      const IndexRange& lv = t.levels[d];
      EventId p = up.begin;
      for (EventId e = lv.begin; e < lv.end; ++e) {
        while (p + 1 < up.end && m.ev.start[p + 1] <= m.ev.start[e]) ++p;
        if (p < up.end && m.ev.start[p] <= m.ev.start[e]) c.parent[e] = p;
      }
    }
    bool cpu = t.kind == TrackKind::CpuThread;
    for (EventId e = t.events.begin; e < t.events.end; ++e) {
      Cat k = m.ev.category(e);
      bool op = (k == Cat::CpuOp || (cpu && k == Cat::None && m.ev.phase[e] == EventPhase::Complete)) &&
                !is_pytorch_marker(m.name_of(e));
      EventId p = c.parent[e];
      bool under = p != kNoEvent && (c.flags[p] & Context::kUnderOp);
      c.flags[e] = uint8_t((op ? Context::kOp : 0) | (op && !under ? Context::kOpRoot : 0) |
                           (op || under ? Context::kUnderOp : 0));
    }
  });
}

void choose_tracks(Context& c) {
  const TraceModel& m = c.m;
  size_t nt = m.tracks.size();
  std::vector<uint64_t> steps(nt), iteration_ranges(nt), ops(nt), bwd(nt), launches(nt);
  for (size_t ti = 0; ti < nt; ++ti) {
    const Track& t = m.tracks[ti];
    if (t.kind != TrackKind::CpuThread) continue;
    size_t base = t.overflow_of != kNoTrack ? t.overflow_of : ti;
    for (EventId e = t.events.begin; e < t.events.end; ++e) {
      Cat k = m.ev.category(e);
      if (c.is_root(e)) {
        ++ops[base];
        if (is_backward_name(m.name_of(e))) ++bwd[base];
      } else if (m.is_profiler_step(e)) {
        ++steps[base];
      } else if (k == Cat::UserAnnotation && (names_iteration(m.name_of(e)) || names_engine_step(m.name_of(e)))) {
        ++iteration_ranges[base];
      } else if (m.gpu_op_of(e) != kNoEvent) {
        ++launches[base];
      }
    }
  }
  double best = -1;
  for (size_t ti = 0; ti < nt; ++ti) {
    const Track& t = m.tracks[ti];
    if (t.kind != TrackKind::CpuThread || t.overflow_of != kNoTrack) continue;
    double fwd_ops = double(ops[ti] - bwd[ti]);
    // The loop's thread: the one with steps, else the one whose ranges name iterations (a
    // trace of runtime calls and NVTX ranges only, as the agent records, has no ops to count).
    double score = double(steps[ti]) * 1e12 + double(iteration_ranges[ti]) * 1e9 + fwd_ops * 4 + double(launches[ti]);
    if (ops[ti] && bwd[ti] * 2 > ops[ti]) score = fwd_ops;  // the autograd thread
    if (score > best) {
      best = score;
      c.main_track = uint32_t(ti);
    }
  }
  c.is_main.assign(nt, 0);
  c.is_backward_track.assign(nt, 0);
  for (uint32_t t = c.main_track; t != kNoTrack && t < nt; t = m.tracks[t].overflow) c.is_main[t] = 1;
  for (size_t ti = 0; ti < nt; ++ti) {
    const Track& t = m.tracks[ti];
    size_t base = t.overflow_of != kNoTrack ? t.overflow_of : ti;
    if (t.kind != TrackKind::CpuThread || c.is_main[base]) continue;
    // Only the main process's autograd threads.
    if (c.main_track != kNoTrack && t.process != m.tracks[c.main_track].process) continue;
    if (bwd[base] > 0 && bwd[base] * 4 >= ops[base]) c.is_backward_track[ti] = 1;
  }
}

// The program's ranges that nothing encloses in time on the main thread: no op, module call or
// other range (a ProfilerStep aside). By time, not by the track's nesting: a range that
// overlapped its neighbours is kept on an overflow track without a parent.
void find_outer_ranges(Context& c) {
  const TraceModel& m = c.m;
  std::vector<EventId> all;  // containers, by start (longest first)
  for (EventId e : c.main_items)
    if (c.is_root(e) || (c.cat(e) == Cat::UserAnnotation && !is_profiler_step_name(m.name_of(e)))) all.push_back(e);
  all.insert(all.end(), c.top_modules.begin(), c.top_modules.end());
  std::sort(all.begin(), all.end(), [&](EventId a, EventId b) {
    return m.ev.start[a] != m.ev.start[b] ? m.ev.start[a] < m.ev.start[b] : m.ev.dur[a] > m.ev.dur[b];
  });
  Ns covered = INT64_MIN;  // the furthest end of what started so far
  for (EventId e : all) {
    if (m.ev.start[e] >= covered && c.cat(e) == Cat::UserAnnotation && !is_pytorch_marker(m.name_of(e)) &&
        !(c.flags[e] & Context::kUnderOp))
      c.outer_ranges.push_back(e);
    covered = std::max(covered, m.ev.end(e));
  }
  std::sort(c.outer_ranges.begin(), c.outer_ranges.end(), [&](EventId a, EventId b) {
    return m.ev.start[a] != m.ev.start[b] ? m.ev.start[a] < m.ev.start[b] : a < b;
  });
}

void collect(Context& c) {
  const TraceModel& m = c.m;
  for (size_t ti = 0; ti < m.tracks.size(); ++ti) {
    const Track& t = m.tracks[ti];
    if (t.kind == TrackKind::GpuStream) {
      for (EventId e = t.events.begin; e < t.events.end; ++e) {
        Cat k = m.ev.category(e);
        if (is_gpu_op_cat(k)) c.gpu_ops.push_back(e);
        else if (k == Cat::ProfilerRange) c.profiler_ranges.push_back(e);
      }
    } else if (c.is_main[ti]) {
      for (EventId e = t.events.begin; e < t.events.end; ++e) {
        c.flags[e] |= Context::kOnMain;
        Cat k = m.ev.category(e);
        if (c.is_root(e) || k == Cat::UserAnnotation ||
            ((k == Cat::None || k == Cat::CpuOp) && m.ev.phase[e] == EventPhase::Complete && is_pytorch_marker(m.name_of(e))))
          c.main_items.push_back(e);
        else if (!(c.flags[e] & Context::kUnderOp) && is_backward_name(m.name_of(e)))
          c.main_items.push_back(e);
        else if (k == Cat::PythonFunction && is_module_frame_name(m.name_of(e)) && outer_module_of(c, e) == kNoEvent)
          c.top_modules.push_back(e);
      }
    } else if (c.is_backward_track[ti]) {
      for (EventId e = t.events.begin; e < t.events.end; ++e) {
        c.flags[e] |= Context::kOnBackward;
        if (c.is_root(e)) c.bwd_items.push_back(e);
      }
    }
  }
  auto by_start = [&](EventId a, EventId b) {
    if (m.ev.start[a] != m.ev.start[b]) return m.ev.start[a] < m.ev.start[b];
    if (m.ev.dur[a] != m.ev.dur[b]) return m.ev.dur[a] > m.ev.dur[b];
    return a < b;
  };
  // Each GPU track's levels are start-sorted runs; a sort of nearly sorted data is cheap.
  std::sort(c.gpu_ops.begin(), c.gpu_ops.end(), by_start);
  std::sort(c.main_items.begin(), c.main_items.end(), by_start);
  std::sort(c.bwd_items.begin(), c.bwd_items.end(), by_start);
  std::sort(c.top_modules.begin(), c.top_modules.end(), by_start);
  find_outer_ranges(c);
  c.has_gpu = !c.gpu_ops.empty();
  c.has_backward = !c.bwd_items.empty();
  if (!c.has_backward)
    for (EventId e : c.main_items)
      if (is_backward_name(m.name_of(e))) {
        c.has_backward = true;
        break;
      }
}

}  // namespace

void build_context(Context& c) {
  compute_parents(c);
  choose_tracks(c);
  collect(c);
}

}  // namespace strata::annot
