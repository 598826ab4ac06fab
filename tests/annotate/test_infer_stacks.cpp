// Layers inferred for stacks of blocks that are neither residual CNNs nor transformers (gated
// convolutional stacks, towers), scored against the module tree that made the ops, as in
// test_infer_layers.cpp.
#include "model_trace.h"

#include <string>
#include <vector>

using namespace strata;
using namespace strata::test;

namespace {

Mod conv1d() { return leaf("Conv1d", {"aten::conv1d"}); }

// The forward's inferred layers whose name starts with `prefix`: how many of their children
// are `unit`s.
std::vector<int> units_per_layer(const AnnotationTree& t, std::string_view prefix, std::string_view unit) {
  std::vector<int> out;
  for (NodeId n = 0; n < t.size(); ++n)
    if (t.kind[n] == NodeKind::Layer && t.phase[n] == PhaseKind::Forward && t.name_of(n).starts_with(prefix)) {
      int k = 0;
      for (NodeId c : t.children(n)) k += t.name_of(c).starts_with(unit);
      out.push_back(k);
    }
  return out;
}

}  // namespace

TEST_CASE("inferred layers: a gated residual layer with a skip output is one layer, not a block per join") {
  // WaveNet: tanh(filter(x)) * sigmoid(gate(x)), x + res(h), then skip(h) summed by the caller
  // across layers. The skip conv is one unit: every layer holds it, so it is no kind of block
  // of its own, nor the end that cuts each layer's gated half off as a stem.
  Mod wave{"WaveBlock",
           {conv1d(), op("aten::slice"), op("aten::tanh"), conv1d(), op("aten::slice"), op("aten::sigmoid"), op("aten::mul"),
            conv1d(), op("aten::add"), conv1d()},
           nullptr};
  Mod root{"WaveNet", {conv1d()}, nullptr};
  for (int k = 0; k < 6; ++k) {
    root.items.push_back(wave);
    root.items.push_back(op("aten::add"));
  }
  for (Mod m : {op("aten::relu"), conv1d(), op("aten::relu"), conv1d(), op("aten::mean")}) root.items.push_back(m);
  BareRun r = bare_run(root);
  // Each layer holds its four convs; the last one too, before the head's relu.
  const std::vector<int> convs = units_per_layer(r.annotation.tree, "Block ", "Conv ");
  CHECK(convs == std::vector<int>(12, 4));  // six a forward, two forwards
}
