// Leaf units of inferred layers (core/annotate/infer_layers.cpp): each forward op classified by
// what PyTorch's leaf modules are, and the ops of one leaf module gathered into one element
// (a norm written by hand, attention from its in-projection to its out-projection, a random
// mask, squeeze-and-excitation). Internal to the annotator.
#pragma once

#include "core/annotate/internal.h"

#include <initializer_list>
#include <string_view>
#include <vector>

namespace strata::annot::infer {

enum class Role : uint8_t { Weight, Norm, Activation, Pool, Dropout, Resample, Pad, Score, Softmax, Shape, Add, Merge, Compute };

bool in(std::string_view n, std::initializer_list<std::string_view> names);
Role role_of(std::string_view full);
// Makes a tensor and computes nothing (zeros, zero_, empty): an RNN's zero state, the tensors
// torch before 1.14's record_function makes around each range.
bool allocates(std::string_view op);
// Splits a tensor into parts that run through different branches.
bool is_split(std::string_view op);
// nn.LSTM, nn.GRU or nn.RNN's op over all their steps (no cell).
bool whole_rnn(std::string_view op);
bool is_unit_role(Role r);

// A leaf unit or a loose op, in forward order.
struct Element {
  bool unit = false;
  Role role = Role::Compute;
  std::string_view kind;     // op_kind of its main op ("conv", "attention")
  std::string_view op;       // its main op's name
  std::vector<NodeId> ops;   // its op nodes, in order
  std::vector<Element> inner;  // attention: what it is made of, in order
  bool one_module = false;     // attention: its parts are one module's ops, not child modules
  bool multihead = false;      // attention: nn.MultiheadAttention's (its layer computes the feed-forward inline)
  size_t lead = 0;             // attention: its parts before its first projection
  bool shares_input = false;   // an op of it takes an input a later op takes too (Context::kSharesInput)
  NodeId node = kNoNode;
};

// A loose transpose or permute (a token of a block's signature, as units are).
inline bool is_transpose(const Element& e) { return !e.unit && (e.op == "aten::transpose" || e.op == "aten::permute"); }

// Whether e is a random mask applied by a product (stochastic depth, a drop path: a bernoulli
// draw, or a uniform one floored), which the caller of a branch applies, not a dropout module.
inline bool random_mask(const Element& e) {
  return e.unit && e.role == Role::Dropout && (e.op.starts_with("aten::bernoulli") || e.op == "aten::rand");
}

// A concatenation cut back to a width at once (a slice of it right after): a module's output
// made of parts (GhostNet's primary features and their cheap copies), no join of branches.
inline bool trimmed_concat(const std::vector<Element>& els, size_t j) {
  return !els[j].unit && els[j].role == Role::Merge && j + 1 < els.size() && !els[j + 1].unit && els[j + 1].op == "aten::slice";
}

// Past a run of loose sums and products with an integer division among them from j (a
// sequence's lengths computed from others: no layer's data goes through a floor division), or j.
size_t past_length_arithmetic(const std::vector<Element>& els, size_t j);
// Past the loose views (reshapes, transposes) from j, to `end` at most: the first element that
// is no view.
size_t past_views(const std::vector<Element>& els, size_t j, size_t end);
// Back over the loose views right before j, to `from` at least: where they start.
size_t before_views(const std::vector<Element>& els, size_t j, size_t from = 0);
// The op names of els[from, to), for comparing runs op by op.
std::string op_sequence(const std::vector<Element>& els, size_t from, size_t to);

// The forward's op nodes as leaf units and loose ops, in order.
std::vector<Element> leaf_units(Context& c, const TreeBuilder& b, const std::vector<NodeId>& ops);
// Takes an attention's parts [from, to) out of it, with their ops (its ops are its parts', in
// order).
std::vector<Element> take_parts(Element& a, size_t from, size_t to);
// Attentions among the elements as units, each from its in-projections to its out-projection
// (core/annotate/infer_attention.cpp).
std::vector<Element> attention_units(const TreeBuilder& b, std::vector<Element> els);

// Whether the model's post-norm halves end with output modules (BERT's SelfOutput and Output).
bool output_modules(const std::vector<Element>& els, bool pre_norm);
// Whether an attention unit projects query, key and value apart; whether it scales its query
// (q_proj(x) * scaling, q *= scaling) before the scores rather than the scores.
bool separate_projections(const Element& attention);
bool scales_query(const Element& attention);
// Whether an attention unit scales neither its query nor its scores (T5's: the scaling folded
// into the initialisation).
bool unscaled_attention(const Element& attention);
// Where els[i] is followed by its dropout (or not), the add and the norm: the norm's index; 0
// where it is not.
size_t add_and_norm_after(const std::vector<Element>& els, size_t i, size_t end);
// Each attention's out-projection that an add and norm follow, taken out of it.
void split_output_projections(std::vector<Element>& els);

}  // namespace strata::annot::infer
