// --model: print(model) text parsed into leaf modules, and inferred layers named and nested
// after them.
#include "helpers.h"

#include "core/annotate/accuracy.h"

using namespace strata;
using namespace strata::test;

namespace {

// torchvision's resnet18 as print(model) writes it (arguments shortened), its blocks folded
// the way newer PyTorch folds repeated modules where it can.
std::string resnet18_text() {
  std::string t = "ResNet(\n  (conv1): Conv2d(3, 64, kernel_size=(7, 7), bias=False)\n  (bn1): BatchNorm2d(64, eps=1e-05)\n"
                  "  (relu): ReLU(inplace=True)\n  (maxpool): MaxPool2d(kernel_size=3, stride=2)\n";
  auto block = [&](int i, bool down) {
    t += "    (" + std::to_string(i) + "): BasicBlock(\n      (conv1): Conv2d(64, 64, kernel_size=(3, 3))\n"
         "      (bn1): BatchNorm2d(64)\n      (relu): ReLU(inplace=True)\n      (conv2): Conv2d(64, 64, kernel_size=(3, 3))\n"
         "      (bn2): BatchNorm2d(64)\n";
    if (down) t += "      (downsample): Sequential(\n        (0): Conv2d(64, 128, kernel_size=(1, 1))\n        (1): BatchNorm2d(128)\n      )\n";
    t += "    )\n";
  };
  for (int l = 1; l <= 4; ++l) {
    t += "  (layer" + std::to_string(l) + "): Sequential(\n";
    block(0, l > 1);
    block(1, false);
    t += "  )\n";
  }
  return t + "  (avgpool): AdaptiveAvgPool2d(output_size=(1, 1))\n  (fc): Linear(in_features=512, out_features=10, bias=True)\n)\n";
}

}  // namespace

TEST_CASE("print(model): leaves in order, folded repeats unfolded, errors name the line") {
  std::vector<ModelLeaf> leaves;
  std::string error;
  REQUIRE(parse_model_text(resnet18_text(), leaves, error));
  REQUIRE(leaves.size() == 4 + 4 * 10 + 3 * 2 + 2);
  CHECK(leaves[0].path == "conv1");
  CHECK(leaves[0].type == "Conv2d");
  CHECK(leaves[4].path == "layer1.0.conv1");
  CHECK(leaves.back().path == "fc");
  CHECK(std::any_of(leaves.begin(), leaves.end(), [](auto& l) { return l.path == "layer2.0.downsample.1" && l.type == "BatchNorm2d"; }));

  REQUIRE(parse_model_text("Net(\n  (blocks): ModuleList(\n    (0-2): 3 x Block(\n      (fc): Linear(8, 8)\n      (act): GELU()\n"
                           "    )\n  )\n  (heads): Sequential(\n    (1-3): 3 x Linear(in_features=8, out_features=2)\n  )\n)\n",
                           leaves, error));
  std::vector<std::string> paths;
  for (auto& l : leaves) paths.push_back(l.path);
  CHECK(paths == std::vector<std::string>{"blocks.0.fc", "blocks.0.act", "blocks.1.fc", "blocks.1.act", "blocks.2.fc",
                                          "blocks.2.act", "heads.1", "heads.2", "heads.3"});

  CHECK_FALSE(parse_model_text("Net(\n  (fc): Linear(8, 8)\n", leaves, error));
  CHECK(error.find("still open") != std::string::npos);
  CHECK_FALSE(parse_model_text("Net(\n  this is not a module\n)\n", leaves, error));
  CHECK(error.starts_with("line 2:"));
  CHECK_FALSE(parse_model_text("", leaves, error));
}

TEST_CASE("--model: inferred layers take the model's names and nest as its modules do") {
  auto full = load(torch2_trace("resnet18-train-h100.pt.trace.json.gz"));
  LoadResult bare = load_trace_bytes("bare", strip_events(*full, kStripModules | kStripStacks));
  REQUIRE(bare.model);
  AnnotateOptions o;
  std::string error;
  REQUIRE(parse_model_text(resnet18_text(), o.model, error));
  Annotation named = annotate(*bare.model, o);
  Annotation plain = annotate(*bare.model);
  CHECK(named.layer_source == LayerSource::Heuristic);
  const AnnotationTree& t = named.tree;
  NodeId conv = find_node(t, "Iteration 2/Forward/layer1/layer1.0/layer1.0.conv1");
  REQUIRE(conv != kNoNode);
  CHECK(t.kind[conv] == NodeKind::Layer);
  CHECK(find_node(t, "Iteration 2/Forward/layer4/layer4.1/layer4.1.bn2") != kNoNode);
  CHECK(find_node(t, "Iteration 2/Forward/fc") != kNoNode);
  // The names change the grouping above the leaf layers only: the leaves score as before.
  const GroundTruth truth = ground_truth(*full);
  CHECK(score_against(*bare.model, named, truth).layer_f1 == doctest::Approx(score_against(*bare.model, plain, truth).layer_f1));
  // Without the model, the names say what a unit is.
  CHECK(find_node(plain.tree, "Iteration 2/Forward/layer1") == kNoNode);
}
