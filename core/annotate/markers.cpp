// Names the program gave: PyTorch's markers and people's range names (markers.h).
#include "core/annotate/markers.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace strata {

namespace {

std::string lower_ascii(std::string_view s) {
  std::string o(s);
  for (char& ch : o) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return o;
}

bool has(const std::string& s, std::string_view k) { return s.find(k) != std::string::npos; }

// The name's letters, lower case ("## Zero_Grad ##" → "zerograd").
std::string letters(std::string_view s) {
  std::string o;
  for (char ch : s)
    if (std::isalpha(static_cast<unsigned char>(ch))) o += char(std::tolower(static_cast<unsigned char>(ch)));
  return o;
}

// A whole word of `l` (lower case) is `w`: bounded by non-letters.
bool has_word(const std::string& l, std::string_view w) {
  for (size_t p = l.find(w); p != std::string::npos; p = l.find(w, p + 1)) {
    bool left = p == 0 || !std::isalpha(static_cast<unsigned char>(l[p - 1]));
    size_t e = p + w.size();
    bool right = e >= l.size() || !std::isalpha(static_cast<unsigned char>(l[e]));
    if (left && right) return true;
  }
  return false;
}

}  // namespace

bool is_pytorch_marker(std::string_view n) {
  return is_profiler_step_name(n) || is_dataloader_marker(n) ||
         (n.starts_with("Optimizer.") && n.find('#') != std::string_view::npos);
}

std::string_view module_class(std::string_view module) {
  size_t u = module.rfind('_');
  if (u == std::string_view::npos || u + 1 == module.size()) return module;
  for (size_t i = u + 1; i < module.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(module[i]))) return module;
  return module.substr(0, u);
}

bool is_loss_module(std::string_view module) {
  std::string_view c = module_class(module);
  return c.ends_with("Loss") || c.ends_with("loss");
}

bool names_iteration(std::string_view n) {
  std::string l = lower_ascii(n.substr(0, 64));
  return has(l, "iteration") || has(l, "train_step") || has(l, "training_step");
}

bool names_engine_step(std::string_view n) {
  std::string l = lower_ascii(n.substr(0, 64));
  return l.starts_with("step[") || l.starts_with("step(") || l.starts_with("execute_") || l == "step" ||
         l.starts_with("engine_step") || l.starts_with("model_step");
}

std::string serving_stage(std::string_view n) {
  std::string l = lower_ascii(n.substr(0, 160));
  // vLLM: "execute_context_N(…)_generation_M(…)": N prefill and M decode requests.
  auto count_after = [&](std::string_view key) -> long {
    size_t p = l.find(key);
    if (p == std::string::npos) return -1;
    p += key.size();
    long v = 0;
    bool any = false;
    for (; p < l.size() && std::isdigit(static_cast<unsigned char>(l[p])); ++p, any = true) v = v * 10 + (l[p] - '0');
    return any ? v : -1;
  };
  long ctx = count_after("context_"), gen = count_after("generation_");
  bool prefill = ctx > 0 || has_word(l, "extend") || has_word(l, "prefill") || has(l, "prefill");
  bool decode = gen > 0 || has_word(l, "decode") || has(l, "decode");
  if (prefill && decode) return "Prefill + decode";
  if (prefill) return "Prefill";
  if (decode) return "Decode";
  return {};
}

bool is_host_collective(std::string_view n) {
  if (n.starts_with("c10d::") || n.starts_with("nccl:") || n.starts_with("gloo:") || n.starts_with("rccl:") ||
      n.find("record_param_comms") != std::string_view::npos)
    return true;
  std::string l = lower_ascii(n.substr(0, 80));
  static constexpr std::array<std::string_view, 8> verbs = {"all_reduce", "allreduce", "all_gather", "allgather",
                                                            "all_to_all", "alltoall", "reduce_scatter", "all2all"};
  for (std::string_view v : verbs)
    if (has(l, v)) return true;
  return false;
}

std::string_view clean_range_name(std::string_view n) {
  auto junk = [](char ch) { return ch == '#' || ch == ' ' || ch == '\t'; };
  while (!n.empty() && junk(n.front())) n.remove_prefix(1);
  while (!n.empty() && junk(n.back())) n.remove_suffix(1);
  // Hotline's and Strata's corpus's truth ranges: "hid=12 Backward".
  if (n.starts_with("hid=")) {
    size_t sp = n.find(' ');
    if (sp != std::string_view::npos) n.remove_prefix(sp + 1);
  }
  return n;
}

RangeName read_range_name(std::string_view n) {
  RangeName r;
  if (is_dataloader_marker(n)) r.phase = PhaseKind::DataLoading;
  else if (is_zero_grad_marker(n)) r.phase = PhaseKind::ZeroGrad;
  else if (is_optimizer_step_marker(n)) r.phase = PhaseKind::Optimizer;
  else if (n.ends_with(".forward") && n.find('#') == std::string_view::npos) r.phase = PhaseKind::Forward;  // DistributedDataParallel.forward
  if (r.phase || is_pytorch_marker(n)) {
    r.pytorch = true;
    return r;
  }
  std::string_view clean = clean_range_name(n);
  r.label = std::string(clean);
  // A pipeline schedule's chunk: "attn(F)", "mlp(B)", "attn(W)" (DualPipe's forward, input
  // gradient and weight gradient), "F3", "B3" are too terse to read as such.
  if (clean.size() > 3 && clean[clean.size() - 3] == '(' && clean.back() == ')') {
    switch (clean[clean.size() - 2]) {
      case 'F': r.phase = PhaseKind::Forward; return r;
      case 'B': r.phase = PhaseKind::Backward; return r;
      case 'W': r.phase = PhaseKind::Backward; r.weight_grad = true; return r;
      default: break;
    }
  }
  std::string l = lower_ascii(clean);
  bool fwd = has(l, "forward") || has_word(l, "fwd");
  bool bwd = has(l, "backward") || has_word(l, "bwd");
  if (has(l, "zero_grad") || has(l, "zero grad") || has(l, "zerograd")) r.phase = PhaseKind::ZeroGrad;
  else if (bwd && fwd) r.phase.reset();  // "forward_backward_step": a step, not a phase
  else if (bwd) r.phase = PhaseKind::Backward;
  else if (has(l, "optimizer") || has(l, "optim step") || has(l, "optim_step")) r.phase = PhaseKind::Optimizer;
  else if (has(l, "loss")) r.phase = PhaseKind::Loss;
  else if (fwd) r.phase = PhaseKind::Forward;
  else {
    static constexpr std::array<std::string_view, 13> data = {
        "load data", "data load", "dataload", "data_load", "load_data", "next batch", "get batch", "load_batch",
        "wait_for_batch", "copy_batch", "batch_to", "data_dist", "input_dist"};
    for (std::string_view k : data)
      if (has(l, k)) r.phase = PhaseKind::DataLoading;
  }
  // A name that says no more than its phase shows as the phase.
  static constexpr std::array<std::string_view, 14> bare = {
      "forward", "fwd", "backward", "bwd", "loss", "calcloss", "computeloss", "optimizer", "optimizerstep",
      "optimstep", "zerograd", "dataloading", "loaddata", "forwardpass"};
  const std::string word = letters(clean);
  if (r.phase && std::find(bare.begin(), bare.end(), word) != bare.end()) r.label.clear();
  return r;
}

}  // namespace strata
