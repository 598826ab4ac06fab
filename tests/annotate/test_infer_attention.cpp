// Attention units inferred where the scores are no matrix product: a graph attention's, an
// additive attention's, computed elementwise from the projection before the softmax.
#include "model_trace.h"

#include <doctest/doctest.h>

using namespace strata;
using namespace strata::test;

namespace {

// A dense graph attention layer (GAT's): the projection viewed into heads, each end's score
// (a product with a and its sum), the two broadcast and added, LeakyReLU, the adjacency's mask,
// the softmax, its dropout, the neighbours' weighted sum (einsum), the heads concatenated or,
// in the last layer, averaged.
Mod gat_layer(bool last) {
  return Mod{"GATLayer",
             {linear(), op("aten::view"), op("aten::mul"), op("aten::sum"), op("aten::mul"), op("aten::sum"), op("aten::unsqueeze"),
              op("aten::unsqueeze"), op("aten::add"), leaf("LeakyReLU", {"aten::leaky_relu"}), op("aten::bitwise_not"),
              op("aten::masked_fill"), op("aten::softmax"), dropout(), op("aten::einsum"), op(last ? "aten::mean" : "aten::reshape")},
             nullptr};
}

}  // namespace

TEST_CASE("inferred layers: a graph attention whose scores are elementwise is one attention, its heads' mean included") {
  BareRun r = bare_run(Mod{"GAT", {dropout(), gat_layer(false), leaf("ELU", {"aten::elu"}), dropout(), gat_layer(true)}, nullptr});
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));  // both layers, each exactly
  CHECK(s.node_precision == doctest::Approx(1.0));
  CHECK(has_layer(r.annotation.tree, "Attention 1"));
  CHECK(has_layer(r.annotation.tree, "Attention 2"));
}

TEST_CASE("inferred layers: elementwise ops and a softmax with no weighted sum after make no attention (a router's gate)") {
  // A mixture of experts' router: the gate's linear, a temperature's product, the softmax,
  // the top-k; then each expert's MLP.
  Mod router{"Router", {linear(), op("aten::mul"), op("aten::sum"), op("aten::softmax"), op("aten::topk")}, nullptr};
  Mod expert{"Expert", {linear(), leaf("ReLU", {"aten::relu"}), linear()}, nullptr};
  BareRun r = bare_run(Mod{"MoE", {router, expert, expert, op("aten::add")}, nullptr});
  CHECK_FALSE(has_layer(r.annotation.tree, "Attention 1"));
}
