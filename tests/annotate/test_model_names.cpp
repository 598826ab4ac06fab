// --model: print(model) text parsed into leaf modules and into the whole module tree; inferred
// layers named and nested after the leaves, layers from nn.Module frames renamed by the tree's
// attribute paths.
#include "helpers.h"
#include "require_ok.h"

#include "core/annotate/accuracy.h"

#include <algorithm>

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

// A hand-made trace shaped like a with_modules one: Net_0 runs layer1 (two Blocks, each
// fc1, act, fc2, act again: one ReLU instance called twice; the second Block inside an
// activation-checkpointing wrapper the model does not list), an Identity it does not list
// either, and head; then a CrossEntropyLoss module; then backward on the autograd thread, each
// op tied to its forward op by Sequence number.
struct TraceText {
  std::string s = R"({"traceEvents": [)";
  int seq = 0;
  std::vector<std::pair<int, std::string>> fwd;  // (sequence number, backward op) in forward order
  void x(const char* cat, const std::string& name, int tid, int ts, int dur, const std::string& args = "{}") {
    s += R"({"ph": "X", "cat": ")" + std::string(cat) + R"(", "name": ")" + name + R"(", "pid": 1, "tid": )" +
         std::to_string(tid) + R"(, "ts": )" + std::to_string(ts) + R"(, "dur": )" + std::to_string(dur) +
         R"(, "args": )" + args + "},\n";
  }
  // A module call holding one op (with its backward op), 100 µs.
  void module(const std::string& instance, const char* op, const char* backward, int ts) {
    x("python_function", "nn.Module: " + instance, 1, ts, 100);
    x("python_function", "torch/nn/modules/module.py(1783): _call_impl", 1, ts + 5, 90);
    ++seq;
    x("cpu_op", op, 1, ts + 10, 80, R"({"Sequence number": )" + std::to_string(seq) + "}");
    fwd.push_back({seq, backward});
  }
  std::string json() {
    x("user_annotation", "ProfilerStep#1", 1, 0, 20000);
    int t = 100;
    x("python_function", "nn.Module: Net_0", 1, t, 1900);
    x("python_function", "nn.Module: Sequential_0", 1, t + 10, 1400);
    int lin = 0;
    for (int b = 0; b < 2; ++b) {
      const int bt = t + 20 + b * 680;
      if (b == 1) x("python_function", "nn.Module: CheckpointWrapper_0", 1, bt - 5, 680);
      x("python_function", "nn.Module: Block_" + std::to_string(b), 1, bt, 670);
      const std::string relu = "ReLU_" + std::to_string(b);
      module("Linear_" + std::to_string(lin++), "aten::linear", "AddmmBackward0", bt + 10);
      module(relu, "aten::relu", "ReluBackward0", bt + 170);
      module("Linear_" + std::to_string(lin++), "aten::linear", "AddmmBackward0", bt + 330);
      module(relu, "aten::relu", "ReluBackward0", bt + 490);
    }
    module("Identity_0", "aten::clone", "CloneBackward0", t + 1450);
    module("Linear_" + std::to_string(lin), "aten::linear", "AddmmBackward0", t + 1600);
    x("python_function", "nn.Module: CrossEntropyLoss_0", 1, 2200, 300);
    ++seq;
    x("cpu_op", "aten::cross_entropy_loss", 1, 2210, 280, R"({"Sequence number": )" + std::to_string(seq) + "}");
    x("cpu_op", "autograd::engine::evaluate_function: NllLossBackward0", 2, 3000, 90);
    x("cpu_op", "NllLossBackward0", 2, 3005, 80, R"({"Sequence number": )" + std::to_string(seq) + R"(, "Fwd thread id": 1})");
    int bt = 3100;
    for (auto it = fwd.rbegin(); it != fwd.rend(); ++it, bt += 100) {
      x("cpu_op", "autograd::engine::evaluate_function: " + it->second, 2, bt, 90);
      x("cpu_op", it->second, 2, bt + 5, 80, R"({"Sequence number": )" + std::to_string(it->first) + R"(, "Fwd thread id": 1})");
    }
    x("cpu_op", "aten::sum", 1, bt + 200, 50);
    return s + R"({"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "pt_autograd_0"}}]})";
  }
};

const char* kNetText =
    "Net(\n"
    "  (layer1): Sequential(\n"
    "    (0): Block(\n"
    "      (fc1): Linear(in_features=8, out_features=8, bias=True)\n"
    "      (act): ReLU()\n"
    "      (fc2): Linear(in_features=8, out_features=8, bias=True)\n"
    "    )\n"
    "    (1): Block(\n"
    "      (fc1): Linear(in_features=8, out_features=8, bias=True)\n"
    "      (act): ReLU()\n"
    "      (fc2): Linear(in_features=8, out_features=8, bias=True)\n"
    "    )\n"
    "  )\n"
    "  (head): Linear(in_features=8, out_features=2, bias=True)\n"
    ")\n";

int32_t module_at(const std::vector<ModelModule>& tree, std::string_view path) {
  for (size_t i = 0; i < tree.size(); ++i)
    if (tree[i].path == path) return int32_t(i);
  return -1;
}

std::vector<std::string> child_paths(const std::vector<ModelModule>& tree, int32_t m) {
  std::vector<std::string> out;
  for (int32_t c : tree[size_t(m)].children) out.push_back(tree[size_t(c)].path);
  return out;
}

}  // namespace

TEST_CASE("print(model): the whole module tree, every module with its path, type and children in order") {
  std::vector<ModelModule> tree;
  std::string error;
  tree = test::require_ok(parse_model_tree(resnet18_text()));
  // The root, 4 stem modules, 4 Sequentials of 2 BasicBlocks of 5, 3 downsamples of 2, avgpool, fc.
  REQUIRE(tree.size() == 1 + 4 + 4 * (1 + 2 * 6) + 3 * 3 + 2);
  CHECK(tree[0].path.empty());
  CHECK(tree[0].type == "ResNet");
  CHECK(tree[0].parent == -1);
  CHECK(child_paths(tree, 0) == std::vector<std::string>{"conv1", "bn1", "relu", "maxpool", "layer1", "layer2", "layer3",
                                                         "layer4", "avgpool", "fc"});
  const int32_t conv2 = module_at(tree, "layer4.1.conv2");
  REQUIRE(conv2 >= 0);
  CHECK(tree[size_t(conv2)].type == "Conv2d");
  CHECK(tree[size_t(conv2)].children.empty());
  const int32_t block = tree[size_t(conv2)].parent;
  CHECK(tree[size_t(block)].path == "layer4.1");
  CHECK(tree[size_t(block)].type == "BasicBlock");
  CHECK(tree[size_t(tree[size_t(block)].parent)].path == "layer4");
  CHECK(tree[size_t(tree[size_t(block)].parent)].type == "Sequential");
  CHECK(child_paths(tree, block) == std::vector<std::string>{"layer4.1.conv1", "layer4.1.bn1", "layer4.1.relu", "layer4.1.conv2", "layer4.1.bn2"});
  const int32_t down = module_at(tree, "layer2.0.downsample");
  REQUIRE(down >= 0);
  CHECK(tree[size_t(down)].type == "Sequential");
  CHECK(child_paths(tree, down) == std::vector<std::string>{"layer2.0.downsample.0", "layer2.0.downsample.1"});
  CHECK(module_at(tree, "layer1.0.downsample") == -1);
  // Pre-order: every module after its parent, a parent's subtree contiguous.
  for (size_t i = 1; i < tree.size(); ++i) CHECK(size_t(tree[i].parent) < i);
  // The leaves are what parse_model_text gives.
  std::vector<ModelLeaf> leaves;
  leaves = test::require_ok(parse_model_text(resnet18_text()));
  const std::vector<ModelLeaf> from_tree = model_leaves(tree);
  REQUIRE(from_tree.size() == leaves.size());
  for (size_t i = 0; i < leaves.size(); ++i) CHECK(from_tree[i].path == leaves[i].path);

  // Folded repeats, nested: each copy a whole subtree with its own paths.
  tree = test::require_ok(parse_model_tree("Net(\n  (blocks): ModuleList(\n    (0-2): 3 x Block(\n      (mlp): Sequential(\n"
                           "        (0-1): 2 x Linear(in_features=8, out_features=8, bias=True)\n      )\n"
                           "      (act): GELU(approximate='none')\n    )\n  )\n  (heads): Sequential(\n"
                           "    (1-3): 3 x Linear(in_features=8, out_features=2)\n  )\n)\n"));
  const int32_t blocks = module_at(tree, "blocks");
  REQUIRE(blocks >= 0);
  CHECK(child_paths(tree, blocks) == std::vector<std::string>{"blocks.0", "blocks.1", "blocks.2"});
  const int32_t b2 = module_at(tree, "blocks.2");
  REQUIRE(b2 >= 0);
  CHECK(tree[size_t(b2)].type == "Block");
  CHECK(child_paths(tree, b2) == std::vector<std::string>{"blocks.2.mlp", "blocks.2.act"});
  CHECK(child_paths(tree, module_at(tree, "blocks.2.mlp")) == std::vector<std::string>{"blocks.2.mlp.0", "blocks.2.mlp.1"});
  CHECK(tree[size_t(module_at(tree, "blocks.2.mlp.1"))].parent == module_at(tree, "blocks.2.mlp"));
  CHECK(child_paths(tree, module_at(tree, "heads")) == std::vector<std::string>{"heads.1", "heads.2", "heads.3"});
  for (size_t i = 1; i < tree.size(); ++i) {
    REQUIRE(tree[i].parent >= 0);
    const ModelModule& p = tree[size_t(tree[i].parent)];
    CHECK(std::count(p.children.begin(), p.children.end(), int32_t(i)) == 1);
    CHECK((p.path.empty() || tree[i].path.starts_with(p.path + ".")));
  }
  // Errors name the line, and leave nothing behind.
  error = parse_model_tree("Net(\n  (fc): Linear(8, 8)\n  (x): ???\n)\n").status().message();
  CHECK(error.starts_with("line 3:"));
  error = parse_model_tree("Net(\n)\n)\n").status().message();
  CHECK(error.starts_with("line 3:"));
  AnnotateOptions o;
  CHECK_FALSE(set_model_text(o, "Net(\n  (fc): Linear(8, 8)\n").is_ok());
  CHECK(o.model.empty());
  CHECK(o.model_tree.empty());
  REQUIRE(set_model_text(o, kNetText).is_ok());
  CHECK(o.model_tree.size() == 11);
  CHECK(o.model.size() == 7);
}

TEST_CASE("--model: layers from nn.Module frames take the model's attribute paths, backward layers too") {
  TraceText text;
  LoadResult r = load_trace_bytes("modules.json", text.json());
  INFO(r.error());
  REQUIRE(r.model);
  const TraceModel& m = *r.model;
  Annotation plain = annotate(m);
  REQUIRE(plain.layer_source == LayerSource::Module);
  REQUIRE(find_node(plain.tree, "Iteration 1/Forward/Net_0/Sequential_0/Block_0/Linear_0") != kNoNode);
  for (bool folded : {false, true}) {
    CAPTURE(folded);
    AnnotateOptions o;
    std::string model_text = kNetText;
    if (folded) {  // the same model as newer PyTorch prints it: the two Blocks folded
      const size_t from = model_text.find("    (0): Block("), second = model_text.find("    (1): Block(");
      const size_t end = model_text.find("    )\n", second) + 6;
      model_text = model_text.substr(0, from) + "    (0-1): 2 x Block(" + model_text.substr(from + 15, second - from - 15) +
                   model_text.substr(end);
    }
    REQUIRE(set_model_text(o, model_text).is_ok());
    Annotation a = annotate(m, o);
    check_tree(a.tree);
    const AnnotationTree& t = a.tree;
    for (const char* path : {"Iteration 1/Forward/Net/layer1/layer1.0/layer1.0.fc1", "Iteration 1/Forward/Net/layer1/layer1.0/layer1.0.act",
                             "Iteration 1/Forward/Net/layer1/layer1.0/layer1.0.fc2", "Iteration 1/Forward/Net/layer1/CheckpointWrapper_0/layer1.1/layer1.1.fc2",
                             "Iteration 1/Forward/Net/head"}) {
      CAPTURE(path);
      const NodeId n = find_node(t, path);
      REQUIRE(n != kNoNode);
      CHECK(t.kind[n] == NodeKind::Layer);
    }
    // The ReLU called twice in a block is that block's one `act`, twice.
    const NodeId block0 = find_node(t, "Iteration 1/Forward/Net/layer1/layer1.0");
    REQUIRE(block0 != kNoNode);
    CHECK(child_names(t, block0) == std::vector<std::string>{"layer1.0.fc1", "layer1.0.act", "layer1.0.fc2", "layer1.0.act"});
    // Modules the model does not list keep their names; a wrapper's modules are its holder's.
    CHECK(find_node(t, "Iteration 1/Forward/Net/Identity_0") != kNoNode);
    CHECK(find_node(t, "Iteration 1/Forward/Net/layer1/CheckpointWrapper_0/layer1.1") != kNoNode);
    CHECK_FALSE(has_layer(t, "Linear_0"));
    CHECK_FALSE(has_layer(t, "Block_1"));
    // Backward layers mirror the forward ones, with their names.
    size_t mirrored = 0;
    for (NodeId i = 0; i < t.size(); ++i)
      if (t.mirror[i] != kNoNode) {
        ++mirrored;
        CHECK(t.name_of(i) == t.name_of(t.mirror[i]));
      }
    CHECK(mirrored >= 8);
    CHECK(find_node(t, "Iteration 1/Backward/Net/layer1/CheckpointWrapper_0/layer1.1/layer1.1.fc1") != kNoNode);
    CHECK(find_node(t, "Iteration 1/Backward/Net/head") != kNoNode);
    CHECK(std::any_of(a.notes.begin(), a.notes.end(), [](const std::string& n) {
      return n.find("attribute paths") != std::string::npos && n.find("Identity_0") != std::string::npos;
    }));
  }
  // A model whose root the trace never calls: the names stay, and a note says why.
  AnnotateOptions other;
  REQUIRE(set_model_text(other, "Other(\n  (fc): Linear(8, 8)\n)\n").is_ok());
  Annotation a = annotate(m, other);
  CHECK(has_layer(a.tree, "Net_0"));
  CHECK(has_layer(a.tree, "Linear_0"));
  CHECK(std::any_of(a.notes.begin(), a.notes.end(), [](const std::string& n) { return n.find("no nn.Module call") != std::string::npos; }));
}

TEST_CASE("--model on a real with_modules trace: resnet18's module calls named layer4.1.conv2, backward too") {
  auto m = load(torch2_trace("resnet18-train-h100.pt.trace.json.gz"));
  AnnotateOptions o;
  REQUIRE(set_model_text(o, resnet18_text()).is_ok());
  Annotation a = annotate(*m, o);
  check_tree(a.tree);
  CHECK(a.layer_source == LayerSource::Module);
  const AnnotationTree& t = a.tree;
  for (const char* path : {"Iteration 2/Forward/ResNet/conv1", "Iteration 2/Forward/ResNet/layer1/layer1.0/layer1.0.conv1",
                           "Iteration 2/Forward/ResNet/layer4/layer4.1/layer4.1.conv2",
                           "Iteration 2/Forward/ResNet/layer2/layer2.0/layer2.0.downsample/layer2.0.downsample.0",
                           "Iteration 3/Forward/ResNet/layer3/layer3.1/layer3.1.bn2", "Iteration 2/Forward/ResNet/fc",
                           "Iteration 2/Backward/ResNet/layer1/layer1.0/layer1.0.conv2"}) {
    CAPTURE(path);
    CHECK(find_node(t, path) != kNoNode);
  }
  // Every module call of the model is named.
  for (NodeId n = 0; n < t.size(); ++n)
    if (t.kind[n] == NodeKind::Layer && t.phase[n] == PhaseKind::Forward) {
      CAPTURE(t.path(n));
      CHECK(t.name_of(n).find('_') == std::string_view::npos);
    }
  // The reduced tree is made from the renamed one.
  bool reduced_named = false;
  for (NodeId n = 0; n < a.reduced.size() && !reduced_named; ++n) reduced_named = a.reduced.name_of(n) == "layer4.1.conv2";
  CHECK(reduced_named);
}

TEST_CASE("print(model): leaves in order, folded repeats unfolded, errors name the line") {
  std::vector<ModelLeaf> leaves;
  std::string error;
  leaves = test::require_ok(parse_model_text(resnet18_text()));
  REQUIRE(leaves.size() == 4 + 4 * 10 + 3 * 2 + 2);
  CHECK(leaves[0].path == "conv1");
  CHECK(leaves[0].type == "Conv2d");
  CHECK(leaves[4].path == "layer1.0.conv1");
  CHECK(leaves.back().path == "fc");
  CHECK(std::any_of(leaves.begin(), leaves.end(), [](auto& l) { return l.path == "layer2.0.downsample.1" && l.type == "BatchNorm2d"; }));

  leaves = test::require_ok(parse_model_text("Net(\n  (blocks): ModuleList(\n    (0-2): 3 x Block(\n      (fc): Linear(8, 8)\n      (act): GELU()\n"
                           "    )\n  )\n  (heads): Sequential(\n    (1-3): 3 x Linear(in_features=8, out_features=2)\n  )\n)\n"));
  std::vector<std::string> paths;
  for (auto& l : leaves) paths.push_back(l.path);
  CHECK(paths == std::vector<std::string>{"blocks.0.fc", "blocks.0.act", "blocks.1.fc", "blocks.1.act", "blocks.2.fc",
                                          "blocks.2.act", "heads.1", "heads.2", "heads.3"});

  error = parse_model_text("Net(\n  (fc): Linear(8, 8)\n").status().message();
  CHECK(error.find("still open") != std::string::npos);
  error = parse_model_text("Net(\n  this is not a module\n)\n").status().message();
  CHECK(error.starts_with("line 2:"));
  CHECK_FALSE(parse_model_text("").is_ok());
}

TEST_CASE("--model: inferred layers take the model's names and nest as its modules do") {
  auto full = load(torch2_trace("resnet18-train-h100.pt.trace.json.gz"));
  LoadResult bare = load_trace_bytes("bare", strip_events(*full, kStripModules | kStripStacks));
  REQUIRE(bare.model);
  AnnotateOptions o;
  o.model = test::require_ok(parse_model_text(resnet18_text()));
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
