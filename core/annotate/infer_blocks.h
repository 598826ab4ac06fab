// Blocks of inferred layers (core/annotate/infer_blocks.cpp): spans [from, to) of a forward's
// leaf units and loose ops (core/annotate/infer_units.h) that one module call made, found from
// where branches join, from repeating scatters, and from kinds of block repeated in a fixed
// order. Internal to the annotator.
#pragma once

#include "core/annotate/infer_units.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace strata::annot::infer {

using Span = std::pair<size_t, size_t>;

// What a run of elements is, for repetition: its units' kinds in order, and its transposes.
std::string signature(const std::vector<Element>& els, size_t from, size_t to);
void add_to_signature(std::string& s, const Element& e);
// The kind an attention's half is of whatever views permute its input around it (a window's
// partition and its reverse): its signature without transposes; any other kind as it is.
std::string without_transposes(const std::string& sig);
// The end of the shortest run from `from` (to `to` at most) whose signature is `sig`, or
// SIZE_MAX where none is.
size_t end_of_signature(const std::vector<Element>& els, size_t from, size_t to, const std::string& sig);
// Back from `to` (not before `from`) over as many units and transposes as `sig` has: where a
// run of that kind ending at `to` starts.
size_t start_of_signature_tokens(const std::vector<Element>& els, size_t from, size_t to, std::string_view sig);
// How many units and transposes a signature holds; how many units.
size_t signature_tokens(std::string_view sig);
size_t signature_units(std::string_view sig);
// Whether a signature ends with a whole kind: its last tokens, not the tail of a token.
bool ends_with_kind(std::string_view sig, std::string_view kind);
// Weight units other than lookups (embeddings take ids: a loop over tables is no computation
// repeated), or SIZE_MAX where the run holds an RNN cell (an unrolled loop's time step, which
// no module wraps).
size_t computing_weights(const std::vector<Element>& els, size_t from, size_t to);

// Whether a kind of block is a conv and its BatchNorm alone, no activation after them: a
// projection shortcut (a block's, when computed before the block's own units).
inline constexpr std::string_view kProjectionShortcut = "conv,batch_norm,";
inline bool projection_shortcut(const std::string& kind) { return kind == kProjectionShortcut; }
// Whether `kind` is `plain` with a projection shortcut (a conv and its norm) somewhere in it.
bool with_projection(const std::string& kind, const std::string& plain);

// Whether els[from, to) joins branches: a loose sum or concatenation.
bool sums_back(const std::vector<Element>& els, size_t from, size_t to);

// Whether the model normalises before its weight ops (pre-activation) rather than after them;
// with a kind, before its weight ops of that kind (a CNN's convs beside a transformer's layers).
bool normalises_first(const std::vector<Element>& els, std::string_view weight_kind = {});
// Whether a norm opens each residual branch (pre-norm) rather than following the add.
bool pre_norm_model(const std::vector<Element>& els);

// Blocks closed where branches join: residual adds and concatenations (`pre_norm`:
// pre_norm_model's answer). With `open_at_shared`, a sum's block opens at the weight op the
// backward shows taking its input beside the shortcut, where one follows another weight op.
std::vector<Span> residual_blocks(const std::vector<Element>& els, bool pre_norm, bool open_at_shared = false);
// Where no branches join (a U-Net's encoder and decoder, a VGG): the runs of units between
// resamplings (pooling, upsampling, a transposed conv) and concatenations, each of two weight
// units or more (lookups aside), whose kind recurs (a U-Net's double convs); a run that starts
// with a recurring kind and goes on (the last double conv, then the output conv) is that
// kind's. Not a run holding an RNN cell: an unrolled loop's time step, no module's call.
std::vector<Span> plain_blocks(const std::vector<Element>& els);
// Where neither joins nor resamplings make blocks: the run of units (by their ops; loose ops
// may differ) repeated back to back that covers the most units, each repetition holding two
// weight units or more (lookups aside), or one with four computing ops or more before it that
// every repetition has (DGCNN's EdgeConv: its neighbour search, then its conv), is one module
// called again (a siamese encoder), running to the next call's first unit (or the ops it
// computes before it); not a run holding an RNN cell, nor one opening with a lookup (which may
// be the caller's).
std::vector<Span> repeated_calls(const std::vector<Element>& els, Span within = {0, SIZE_MAX});
// The calls repeated inside a block that stands alone, as blocks in its place.
void calls_within_lone_blocks(const std::vector<Element>& els, std::vector<Span>& blocks, std::vector<std::string>& sig);
// A GNN's layers from the forward's repeating scatters; none where they do not repeat.
std::vector<Span> message_passing_layers(const std::vector<Element>& els);
// A message-passing layer's update MLP after its last scatter (GIN's): its first weight op to
// its last, with an activation between them and only norms, activations or dropouts after;
// an empty span where there is none.
Span update_mlp(const std::vector<Element>& els, Span layer);
// A message-passing layer's MLPs before its aggregation (EGNN's edge and coordinate MLPs):
// runs of units alone holding two weight ops or more and an activation.
std::vector<Span> message_mlps(const std::vector<Element>& els, Span layer);
// A graph network layer's updates (its edges', nodes', then the graph's): each moves features
// along the graph (a gather, a scatter or a concatenation) then transforms them with weights;
// none where the layer is one such update.
std::vector<Span> graph_updates(const std::vector<Element>& els, Span layer);
// Where blocks begin and end (core/annotate/infer_block_edges.cpp).
// The stem cut from a block that ends like another kind of block.
void split_stem(const std::vector<Element>& els, std::vector<Span>& blocks, std::vector<std::string>& sig);
// A block that is another kind of block repeated is those blocks.
void split_repeats(const std::vector<Element>& els, std::vector<Span>& blocks, std::vector<std::string>& sig);
// A first block's dropout that its kind's other blocks lack is the block before's.
void trim_dropouts(const std::vector<Element>& els, std::vector<Span>& blocks, const std::vector<std::string>& sig);
// Loose ops leading one block of a kind but not its others are outside it.
void trim_loose_leads(const std::vector<Element>& els, std::vector<Span>& blocks, const std::vector<std::string>& sig);
// Loose ops leading every repeat of a kind but not its first, and trailing its last, close blocks.
void close_with_output_ops(const std::vector<Element>& els, std::vector<Span>& blocks, const std::vector<std::string>& sig);
// A contiguous copy of a view goes with that view: no block opens at it.
void copies_with_their_views(const std::vector<Element>& els, std::vector<Span>& blocks);
// A block holding branches alike that each take its input (soft-gated experts) becomes those
// branches, each a block.
void alike_branches(const std::vector<Element>& els, std::vector<Span>& blocks);
// Candidates on one input weighted and summed one by one (a NAS search's mixed edge).
struct Mixture {
  Span whole;
  std::vector<Span> candidates;
};
std::vector<Mixture> weighted_mixtures(const std::vector<Element>& els);
// Each weighted mixture a block, in place of the blocks it overlaps.
void mixtures_as_blocks(const std::vector<Mixture>& mixtures, std::vector<Span>& blocks);
// No block from a forward's first RNN cell to its last: a loop's time steps have no module.
void no_blocks_in_cell_loops(const std::vector<Element>& els, std::vector<Span>& blocks);

// After the last block, a run of a recurring kind's units that sums nothing back, with more
// units after it (MobileNetV2's last inverted residual, which changes the width, then the
// head's conv): a block of that kind (core/annotate/infer_tuples.cpp).
void last_block_without_sum(const std::vector<Element>& els, std::vector<Span>& blocks, std::vector<std::string>& sig);

// Whether the blocks from k are `tuple`'s kinds in order, each right after the one before.
bool tuple_at(const std::vector<uint8_t>& after, const std::vector<std::string>& sig, size_t k, const std::vector<std::string>& tuple);
// Whether some other kind among `kinds` is a variant of `kind` (it but for a projection).
bool has_variant(const std::map<std::string, int>& kinds, const std::string& kind);
// Whether some kind of block recurs (or has a variant).
bool any_recurs(const std::vector<Element>& els, const std::vector<Span>& blocks);
// A resampling up: an upsampling or a transposed conv.
bool upsamples(const Element& e);
// The kinds of layer made of two to four kinds of block repeated back to back.
std::vector<std::vector<std::string>> layer_tuples(const std::vector<Span>& blocks, const std::vector<uint8_t>& after,
                                                   const std::vector<std::string>& sig);

// A forward's layers: blocks paired into layers of sublayers where kinds follow one another in
// a fixed order, and blocks of a kind that recurs, each a layer (core/annotate/infer_tuples.cpp).
struct Stack {
  std::vector<Span> layers;
  std::vector<Span> tupled;        // per layer made of sublayers: its blocks [from, to)
  std::vector<std::string> kinds;  // per layer: its kind (a tuple's, for a layer doing extra work too)
};
// `blocks` and `sig` (their signatures) may change: a stack's last block running into the
// head is cut to its kind.
Stack stack_layers(const std::vector<Element>& els, std::vector<Span>& blocks, std::vector<std::string>& sig);
// Cross-stage partial modules (YOLO's C2f): their spans; the layers that took their convs
// give them back (`layers` and `kinds` may change).
std::vector<Span> cross_stage_partials(const std::vector<Element>& els, std::vector<Span>& layers, std::vector<std::string>& kinds);
// Outside the layers, runs of Linears with activations between them (dropouts apart), each
// from a Linear to a Linear, of a kind seen twice or more: MLP modules (a multi-task model's
// towers).
std::vector<Span> repeated_mlps(const std::vector<Element>& els, const std::vector<Span>& layers);
// The same Linear-activation run twice or more inside one layer (its experts, its towers):
// each run with the activation and dropout after it.
std::vector<Span> repeated_mlps_in_layer(const std::vector<Element>& els, Span layer);

}  // namespace strata::annot::infer
