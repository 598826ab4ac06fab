// Small models written as their module calls, traced as PyTorch's profiler would with the
// truth's hid= and phase ranges around them, for the tests of inferred layers and phases: each
// trace is annotated with the truth stripped, as the accuracy bench does
// (bench/annotate_accuracy.cpp).
#pragma once

#include "helpers.h"

#include "core/annotate/accuracy.h"

#include <cctype>
#include <string>
#include <utility>
#include <vector>

namespace strata::test {

// A module call: its child calls and its own ops in the order they run. An item with `op` set
// is an op of the module itself (F.relu, a residual add), not a call; `kids` are that op's
// own child ops (aten::max's squeeze_ and as_strided_).
struct Mod {
  std::string cls;
  std::vector<Mod> items;
  const char* op = nullptr;
  std::vector<const char*> kids = {};
  bool rounded = false;  // an op that ran last inside the op before: written beside it, at its end, lasting 0 µs
  long rounded_us = 0;    // how long that op lasts as written (its end rounded past its parent's)
  long rounded_after_us = 0;  // how long after its parent's end it is written (its start rounded past it)
  bool shared = false;    // its first op takes an input an op after it takes too (a branch's first op)
};
// The item, its first op taking an input a later op also takes (StepOps::backward_nodes shows it).
inline Mod shared_input(Mod m) {
  m.shared = true;
  return m;
}
inline Mod op(const char* name, std::vector<const char*> kids = {}) { return {"", {}, name, std::move(kids)}; }
inline Mod rounded_child(const char* name, long us = 0, long after_us = 0) { return {"", {}, name, {}, true, us, after_us}; }
inline Mod leaf(const char* cls, std::vector<const char*> ops) {
  Mod m{cls, {}, nullptr};
  for (const char* o : ops) m.items.push_back(op(o));
  return m;
}
inline Mod conv() { return leaf("Conv2d", {"aten::conv2d"}); }
inline Mod conv1d() { return leaf("Conv1d", {"aten::conv1d"}); }
inline Mod bn() { return leaf("BatchNorm2d", {"aten::add_", "aten::batch_norm"}); }  // its batch counter, then the norm
inline Mod relu_module() { return leaf("ReLU", {"aten::relu_"}); }
inline Mod layer_norm() { return leaf("LayerNorm", {"aten::layer_norm"}); }
inline Mod linear() { return leaf("Linear", {"aten::linear"}); }
inline Mod dropout() { return leaf("Dropout", {"aten::dropout"}); }

// Attention written by hand with a projection each (BART's, OPT's): the scaled query, keys and
// values viewed into heads, the scores, their softmax (and its dropout module where asked),
// the weighted sum, the out-projection.
inline Mod separate_qkv_attention(bool attention_dropout = false) {
  Mod a{"Attention", {linear(), op("aten::mul"), linear(), op("aten::view"), op("aten::transpose"), linear(), op("aten::view"),
                      op("aten::transpose"), op("aten::bmm"), op("aten::softmax"), op("aten::bmm"), op("aten::transpose"),
                      op("aten::reshape"), linear()},
        nullptr};
  if (attention_dropout) a.items.insert(a.items.begin() + 10, dropout());
  return a;
}

// nn.MultiheadAttention's own function: its packed in-projection (F.linear) chunked, bmm,
// softmax, dropout, bmm, the out-projection.
inline Mod multihead_attention() {
  return {"MultiheadAttention",
          {op("aten::linear"), op("aten::chunk"), op("aten::view"), op("aten::transpose"), op("aten::bmm"), op("aten::softmax"),
           op("aten::dropout"), op("aten::bmm"), op("aten::transpose"), op("aten::view"), op("aten::linear"), op("aten::view")},
          nullptr};
}

// A training step around the model: the ops of its loss and whether loss.backward()'s seed
// (ones_like, its fill_ left after it by the rounded timestamps) opens the backward.
struct StepOps {
  std::vector<const char*> loss = {"aten::mse_loss"};
  bool seed = false;
  bool range_allocation = false;  // torch 1.13's record_function: aten::zeros just before Optimizer.step#
  // torch before 1.14's record_function around every module call (the truth's ranges): an
  // aten::zeros just before the range, its aten::zero_ inside it or, every other call as the
  // rounding leaves it, beside it; an aten::empty first inside the range.
  bool module_allocations = false;
  // AccumulateGrad's add_ in the backward's last op, left beside it by the clock's rounding.
  bool rounded_backward_tail = false;
  // An op of the optimizer's last, at Optimizer.step#'s end as the clock's rounding left it.
  bool rounded_step_tail = false;
  // The backward as the autograd engine runs it: a node per forward op, last first, each an
  // evaluate_function around its function and, where the op's input is shared (Mod::shared),
  // the aten::add summing its gradient into the one a later op wrote.
  bool backward_nodes = false;
  // Microseconds the first step's loss spends before its first op (a first call's warm-up).
  long first_loss_warmup = 0;
};

struct Writer {
  std::string json = "{\"traceEvents\": [\n";
  int next_hid = 0;
  bool module_allocations = false;
  std::vector<std::pair<std::string, bool>> ops;  // the forward's ops and whether each one's input is shared
  void x(const char* cat, const std::string& name, long ts, long dur) {
    json += "{\"ph\": \"X\", \"cat\": \"" + std::string(cat) + "\", \"name\": \"" + name + "\", \"pid\": 1, \"tid\": 1, \"ts\": " +
            std::to_string(ts) + ", \"dur\": " + std::to_string(dur) + "},\n";
  }
  // The backward of the forward's ops from t (StepOps::backward_nodes); returns the time after it.
  long backward_nodes(long t) {
    const long begin = t;
    t += 10;
    for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
      std::string fn = it->first.substr(it->first.starts_with("aten::") ? 6 : 0);
      if (fn == "add_" || fn == "zeros" || fn == "empty" || fn == "arange") continue;  // no autograd node (a norm's counter)
      if (fn.ends_with("_")) fn.pop_back();
      fn[0] = char(std::toupper(static_cast<unsigned char>(fn[0])));
      fn += "Backward0";
      x("cpu_op", "autograd::engine::evaluate_function: " + fn, t, 8);
      x("cpu_op", fn, t + 1, 3);
      if (it->second) x("cpu_op", "aten::add", t + 5, 1);
      t += 10;
    }
    x("user_annotation", "backward", begin, t + 10 - begin);
    return t + 30;
  }

  // Writes a call's range and ops from t; returns the time after it. `shared`: its first op's
  // input is shared.
  long call(const Mod& m, const std::string& path, long t, bool shared = false) {
    const int hid = next_hid++;
    if (module_allocations) {
      x("cpu_op", "aten::zeros", t, 4);
      x("cpu_op", "aten::empty", t + 1, 1);
      if (hid % 2) x("cpu_op", "aten::zero_", t + 4, 0);
      else x("cpu_op", "aten::zero_", t + 2, 1);
      t += 6;
    }
    const long begin = t;
    t += 2;
    if (module_allocations) x("cpu_op", "aten::empty", t, 1), t += 3;
    int child = 0;
    for (const Mod& it : m.items) {
      if (it.rounded) {
        x("cpu_op", it.op, t - 4 + it.rounded_after_us, it.rounded_us);
      } else if (it.op) {
        const long dur = 10 + 2 * long(it.kids.size());
        x("cpu_op", it.op, t, dur);
        for (size_t k = 0; k < it.kids.size(); ++k) x("cpu_op", it.kids[k], t + 1 + 2 * long(k), 1);
        ops.push_back({it.op, it.shared || shared});
        t += dur + 4;
      } else {
        t = call(it, path == "(root)" ? std::to_string(child) : path + "." + std::to_string(child), t, it.shared || shared);
        ++child;
      }
      shared = false;
    }
    x("user_annotation", "hid=" + std::to_string(hid) + " " + path + " (" + m.cls + ")", begin, t - begin);
    return t + 2;
  }
};

// Two training steps of the model: forward, loss, backward (autograd's ops), optimizer.
inline std::string trace_of(const Mod& root, const StepOps& step_ops = {}) {
  Writer w;
  w.module_allocations = step_ops.module_allocations;
  long t = 1000;
  for (int it = 0; it < 2; ++it) {
    const long step = t;
    w.next_hid = 0;
    const long fwd_end = w.call(root, "(root)", t + 20);
    w.x("user_annotation", "forward", t + 10, fwd_end - t - 5);
    t = fwd_end + 20;
    const long warmup = it == 0 ? step_ops.first_loss_warmup : 0;
    const long loss_dur = 20 + warmup + 20 * long(step_ops.loss.size());
    w.x("user_annotation", "loss", t, loss_dur);
    for (size_t k = 0; k < step_ops.loss.size(); ++k) w.x("cpu_op", step_ops.loss[k], t + 5 + warmup + 20 * long(k), 15);
    t += loss_dur + 20;
    if (step_ops.backward_nodes) {
      t = w.backward_nodes(t);
    } else {
      w.x("user_annotation", "backward", t, 440);
      if (step_ops.seed) {
        w.x("cpu_op", "aten::ones_like", t + 5, 3);
        w.x("cpu_op", "aten::fill_", t + 9, 1);
      }
      for (int k = 0; k < 6; ++k) w.x("cpu_op", "autograd::engine::evaluate_function: ConvolutionBackward0", t + 30 + k * 60, 50);
      if (step_ops.rounded_backward_tail) w.x("cpu_op", "aten::add_", t + 30 + 5 * 60 + 50, 0);
      t += 460;
    }
    w.ops.clear();
    w.x("user_annotation", "optimizer", t, 200);
    if (step_ops.range_allocation) {
      w.x("cpu_op", "aten::zeros", t + 1, 3);
      w.x("cpu_op", "aten::empty", t + 1, 1);
      w.x("cpu_op", "aten::zero_", t + 3, 1);
    }
    w.x("user_annotation", "Optimizer.step#SGD.step", t + 5, 190);
    for (int k = 0; k < 6; ++k) w.x("cpu_op", "aten::add_", t + 10 + k * 30, 20);
    if (step_ops.rounded_step_tail) w.x("cpu_op", "aten::zero_", t + 195, 0);
    t += 220;
    w.x("user_annotation", "ProfilerStep#" + std::to_string(it + 1), step, t - step);
    t += 100;
  }
  return w.json + "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 1, \"args\": {\"name\": \"train\"}}]}";
}

// A model trace annotated bare (the truth's ranges stripped) and its truth.
struct BareRun {
  LoadResult bare;
  GroundTruth truth;
  Annotation annotation;
};
inline BareRun bare_run(const Mod& root, const StepOps& step_ops = {}) {
  LoadResult full = load_trace_bytes("truth.json", trace_of(root, step_ops));
  REQUIRE(full.model);
  BareRun r{load_trace_bytes("bare.json", strip_events(*full.model, kStripTruthRanges)), ground_truth(*full.model), {}};
  REQUIRE(r.truth.present());
  REQUIRE(r.bare.model);
  r.annotation = annotate(*r.bare.model);
  CHECK(r.annotation.layer_source == LayerSource::Heuristic);
  check_tree(r.annotation.tree);
  return r;
}

// The model's trace annotated bare, scored against its truth.
inline AccuracyScore bare_score(const Mod& root, const StepOps& step_ops = {}) {
  BareRun r = bare_run(root, step_ops);
  return score_against(*r.bare.model, r.annotation, r.truth);
}

inline Mod model(std::vector<Mod> body) {
  Mod root{"Net", {conv(), bn(), relu_module()}, nullptr};  // a stem
  for (Mod& m : body) root.items.push_back(std::move(m));
  root.items.push_back(leaf("AdaptiveAvgPool2d", {"aten::adaptive_avg_pool2d"}));
  root.items.push_back(op("aten::flatten"));
  root.items.push_back(leaf("Linear", {"aten::linear"}));
  return root;
}

}  // namespace strata::test
