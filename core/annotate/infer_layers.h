// What makes the inferred layers' nodes (core/annotate/infer_layers.cpp): names them, places
// the units, the blocks, the stages and the model; what a block holds inside (its residual
// branch, branches, pre-norm sublayers, experts and weight-norm groups) is made in
// core/annotate/infer_sublayers.cpp. Internal to the annotator.
#pragma once

#include "core/annotate/infer_blocks.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace strata::annot::infer {

struct LayerMaker {
  Context& c;
  TreeBuilder& b;
  std::map<std::string, uint32_t> counters;  // per readable kind: how many named so far
  std::set<std::string> branch_kinds;         // kinds of the branches split blocks made
  bool conditioned = false;                   // the blocks modulate their halves (adaLN: DiT's)
  bool pre_norm = false;                      // the model normalises before its weight ops (pre_norm_model)

  // The forward's layers under `parent` (under a "Model" node first where `model_root`).
  void run(NodeId parent, const std::vector<NodeId>& ops, bool model_root);

  // Naming and nodes.
  std::vector<Element> units(const std::vector<NodeId>& ops) { return leaf_units(c, b, ops); }
  std::string readable(const Element& e) const;
  std::string numbered(const std::string& what) { return what + " " + std::to_string(++counters[what]); }
  NodeId make(const std::string& name, NodeId parent, const std::vector<NodeId>& kids);
  NodeId layer_over(const Element& e, NodeId parent);
  void place_units(std::vector<Element>& els, NodeId parent);
  std::string block_name(const std::vector<Element>& els, size_t from, size_t to, bool graph);
  NodeId unit_group(const std::string& what, const std::vector<Element>& els, size_t from, size_t to);
  NodeId child_of(NodeId n, NodeId p) const;

  // Around the blocks (infer_layers.cpp).
  void output_module(const std::vector<Element>& els, size_t f, size_t t);
  void unet_modules(const std::vector<Element>& els, const std::vector<Span>& layers, const std::vector<NodeId>& nodes,
                    const std::vector<std::string>& kinds);
  void stages(const std::vector<Element>& els, NodeId parent, const std::vector<Span>& layers, const std::vector<NodeId>& nodes,
              const std::vector<std::string>& sig);

  // Inside a block (infer_sublayers.cpp).
  void residual_branch(const std::vector<Element>& els, size_t f, size_t t);
  bool output_dropout(const std::vector<Element>& els, size_t attention, size_t dropout);
  void shared_input_branches(const std::vector<Element>& els, size_t f, size_t t);
  void split_branch(const std::vector<Element>& els, size_t f, size_t t);
  bool branch(const std::vector<Element>& els, size_t from, size_t to);
  void parallel_branches(const std::vector<Element>& els, size_t f, size_t t);
  void sublayer(const std::vector<Element>& els, size_t f, size_t t, bool shares_norm, bool experts_only, bool norm_inside, bool in_half);
  void half_module(const std::vector<Element>& els, size_t f, size_t t);
  void functional_activation(const std::vector<Element>& els, size_t from, size_t end);
  static bool gate_product(const std::vector<Element>& els, size_t j, size_t from, size_t end);
  bool mixture_of_experts(const std::vector<Element>& els, size_t from, size_t end);
  std::vector<NodeId> factorised_convs(const std::vector<Element>& els);
  // `gating`: the units inside a gate or a split attention.
  void weight_norm_groups(std::vector<Element>& els, const std::vector<NodeId>& factorised, const std::vector<Span>& blocks,
                          bool gating = false);
};

}  // namespace strata::annot::infer
