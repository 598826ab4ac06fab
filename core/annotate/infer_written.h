// Leaf units written by hand or spread over several ops (core/annotate/infer_written.cpp), and
// the helpers that make units, for UnitFinder (core/annotate/infer_units.cpp).
#pragma once

#include "core/annotate/infer_units.h"

#include <string>
#include <string_view>
#include <vector>

namespace strata::annot::infer {

// A unit element: what `op` starts, of `role` and `kind`; its ops are added by the caller.
Element new_unit(Role role, std::string_view kind, std::string_view op);
// Appends the ops of the elements in [b, e) (or els[from, to)) to u's.
void take_ops(Element& u, std::vector<Element>::const_iterator b, std::vector<Element>::const_iterator e);
void take_ops(Element& u, const std::vector<Element>& els, size_t from, size_t to);
// One unit of the elements in [b, e), moved inside it (a gate, an attention's bias MLP).
Element grouped(std::string_view kind, std::vector<Element>::iterator b, std::vector<Element>::iterator e);
// The same, left in place of [from, to) in els.
void group_in_place(std::vector<Element>& els, std::string_view kind, size_t from, size_t to);
// What an element does, views apart, for comparing runs of elements.
void add_work(std::string& sig, const Element& e);

// A weight-standardised conv as one weight unit.
std::vector<Element> standardised_weights(std::vector<Element> els);
// A weight set in place right before its op (weight.data *= mask): one unit with that op.
std::vector<Element> weights_set_in_place(std::vector<Element> els);
// Convs back to back on one input, stacked and averaged at once: one unit of parallel kernels.
std::vector<Element> parallel_convs(std::vector<Element> els);
// x * sigmoid(x), the backward showing the sigmoid's input taken twice: one activation.
std::vector<Element> written_swishes(std::vector<Element> els);
// The loose ops right before an RNN's op that read a packed sequence's first batch size and
// make its zero state (select, item, zeros), moved into the RNN's unit.
void take_batch_size_reads(std::vector<Element>& els, Element& rnn);
// A norm applied to each chunk of its input and the chunks concatenated as one norm (a ghost
// batch norm).
std::vector<Element> ghost_norms(std::vector<Element> els);
// A scaled activation's in-place product as the activation's.
std::vector<Element> scaled_activations(std::vector<Element> els);
// A random mask applied by a product (a drop path) as one dropout unit; noise drawn and added
// (StyleGAN's noise injection) as one noise unit.
std::vector<Element> random_masks(std::vector<Element> els);
// An LSTM cell written by hand as one unit.
std::vector<Element> written_cells(std::vector<Element> els);
// Activations written by hand as one each: GELU (tanh, erf and sigmoid forms), GLU, a sine of
// a learned frequency.
std::vector<Element> written_activations(std::vector<Element> els);
// A norm between a permute and the permute back as one norm (a LayerNorm2d).
std::vector<Element> permuted_norms(std::vector<Element> els);
// A normalisation written by hand (RMSNorm, a channels-first LayerNorm, a GRN) as one norm.
std::vector<Element> written_norms(std::vector<Element> els);

}  // namespace strata::annot::infer
