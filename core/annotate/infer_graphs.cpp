// Message passing: a graph network's layers found from the scatters that sum its messages
// into the nodes, and the updates and MLPs inside them. See core/annotate/infer_blocks.h.
#include "core/annotate/infer_blocks.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace strata::annot::infer {

namespace {

// Sums messages into their nodes along edges.
bool is_scatter(const Element& e) {
  std::string_view n = strip_prefix(e.op, "aten::");
  return !e.unit && (n.starts_with("index_add") || n.starts_with("scatter_add") || n.starts_with("scatter_reduce") ||
                     n == "_sparse_mm" || n == "spmm" || n == "sparse_mm" || n == "_sparse_addmm");
}

// Takes the features of each edge's nodes.
bool is_gather(const Element& e) { return !e.unit && is_gather_op(e.op); }

}  // namespace

Span update_mlp(const std::vector<Element>& els, Span layer) {
  size_t last_scatter = SIZE_MAX;
  for (size_t j = layer.first; j < layer.second; ++j)
    if (is_scatter(els[j])) last_scatter = j;
  if (last_scatter == SIZE_MAX) return {};
  size_t first = SIZE_MAX, end = 0, weights = 0;
  for (size_t j = last_scatter + 1; j < layer.second; ++j)
    if (els[j].unit && els[j].role == Role::Weight) {
      if (first == SIZE_MAX) first = j;
      end = j + 1, ++weights;
    }
  if (weights < 2) return {};
  bool activation = false;  // between its first weight op and its last
  for (size_t j = first; j < end; ++j) {
    activation |= els[j].unit && els[j].role == Role::Activation;
    // One chain of units: a sum, a concatenation or an attention between its weight ops joins
    // other computations (a GPS layer's attention beside its message passing).
    if ((!els[j].unit && (els[j].role == Role::Add || els[j].role == Role::Merge)) || (els[j].unit && els[j].kind == "attention")) return {};
  }
  for (size_t j = end; j < layer.second; ++j)  // after it: norms, activations and dropouts only
    if (els[j].unit && els[j].role != Role::Norm && els[j].role != Role::Activation && els[j].role != Role::Dropout) return {};
  return activation ? Span{first, end} : Span{};
}

std::vector<Span> message_mlps(const std::vector<Element>& els, Span layer) {
  size_t last_scatter = SIZE_MAX;
  for (size_t j = layer.first; j < layer.second; ++j)
    if (is_scatter(els[j])) last_scatter = j;
  std::vector<Span> out;
  for (size_t j = layer.first; j < last_scatter && last_scatter != SIZE_MAX;) {
    size_t end = j, weights = 0;
    bool activation = false;
    for (; end < last_scatter && els[end].unit; ++end) {
      weights += els[end].role == Role::Weight && els[end].kind != "embedding";
      activation |= els[end].role == Role::Activation;
    }
    if (weights >= 2 && activation) out.push_back({j, end});
    j = end + 1;
  }
  return out;
}

std::vector<Span> graph_updates(const std::vector<Element>& els, Span layer) {
  auto moves = [&](size_t j) {
    return is_scatter(els[j]) || is_gather(els[j]) || (!els[j].unit && els[j].role == Role::Merge && !trimmed_concat(els, j));
  };
  std::vector<Span> out;
  size_t from = layer.first, after_unit = SIZE_MAX;  // just after the last unit, when only reshapes follow it
  bool weights = false, moved = false, units = false;
  for (size_t j = layer.first; j <= layer.second; ++j) {
    const bool loose_op = j < layer.second && !els[j].unit && els[j].role != Role::Shape;
    if (j == layer.second || (loose_op && after_unit != SIZE_MAX)) {  // an update ends at its last unit
      if (j == layer.second && !units && !out.empty()) break;  // the layer's own ops after (its residual sums)
      const size_t end = j == layer.second ? j : after_unit;
      // Weights before the first move are no update (a stem the layer was cut with).
      const bool stem = !moved && out.empty() && j < layer.second;
      if (!stem && (!weights || !moved)) return {};
      if (!stem) out.push_back({from, end});
      from = end;
      weights = moved = units = false;
      if (j == layer.second) break;
    }
    if (els[j].unit) after_unit = j + 1;
    else if (loose_op) after_unit = SIZE_MAX;
    weights |= els[j].unit && els[j].role == Role::Weight;
    units |= els[j].unit;
    moved |= moves(j);
  }
  return out.size() >= 2 ? out : std::vector<Span>{};
}

// Message passing (a GNN's layers): each layer sums its messages into the nodes with a
// scatter (index_add_, scatter_add_, a sparse product); where the forward's scatters repeat
// in a fixed pattern, each repetition is a layer. A layer starts at its first gather (and the
// buffer it sums into), or at the weight ops right before that gather when it transforms
// first (GCN, GAT); it ends where the next one starts, less a dropout its caller applies
// between layers; the last runs through the units the one before has. Sums inside a layer (a
// self term, (1 + eps) x) are its own, not residual joins.
std::vector<Span> message_passing_layers(const std::vector<Element>& els) {
  // A router's top-k scatters tokens back from experts, not messages along edges.
  if (std::any_of(els.begin(), els.end(), [](const Element& e) { return !e.unit && e.op == "aten::topk"; })) return {};
  std::vector<size_t> at;
  for (size_t j = 0; j < els.size(); ++j)
    if (is_scatter(els[j])) at.push_back(j);
  auto transform = [&](size_t j) { return els[j].unit && els[j].role == Role::Weight && els[j].kind != "embedding"; };
  // The layers if each holds `period` scatters, or none where one would hold no weights.
  auto layers = [&](size_t period) -> std::vector<Span> {
    // Layers transform first (GCN, GAT) unless the forward gathers before any weight op
    // (GraphSAGE's, which updates after): then the weight ops before a gather are the layer
    // before's.
    bool transform_first = false;
    for (size_t j = 0; j < at[0] && !transform_first; ++j) transform_first = transform(j);
    std::vector<size_t> starts;
    bool residual = false;  // layers end with the sum that joins their update back
    for (size_t k = 0; k < at.size(); k += period) {
      // From its first gather since the layer before (what runs between it and the scatter, an
      // attention's scores too, is the layer's), back over the loose ops before it, then over
      // the weight ops (and their views) whose output it gathers.
      const size_t floor = k == 0 ? 0 : at[k - 1] + 1;
      size_t st = at[k];
      for (size_t j = at[k]; j > floor; --j)
        if (is_gather(els[j - 1])) st = j - 1;
      // A sum before them joins the layer before's update back to its input (EGNN's h + the
      // node MLP): it and the weight ops before it are that layer's, not this one's transform.
      bool joined = false;
      while (st > floor && !els[st - 1].unit) joined |= els[--st].role == Role::Add;
      if (joined && k > 0)
        while (!els[st].unit && els[st].role == Role::Add) ++st, residual = true;
      for (size_t j = st; transform_first && !joined && j > floor && (transform(j - 1) || (!els[j - 1].unit && els[j - 1].role == Role::Shape)); --j)
        if (transform(j - 1)) st = j - 1;
      starts.push_back(st);
    }
    for (size_t k = 1; k < starts.size(); ++k)
      if (starts[k] <= starts[k - 1]) return {};
    // A graph network's updates each end with their dropout: a layer's last one's is its own.
    // Its sums right after a layer's last update are that layer's residual joins (x + x').
    auto dropout = [&](size_t j) { return els[j].unit && els[j].role == Role::Dropout; };
    bool updates_drop_out = false, graph_network = false;
    for (size_t k = 0; k + 1 < starts.size(); ++k) {
      const std::vector<Span> ups = graph_updates(els, {starts[k], starts[k + 1]});
      graph_network |= !ups.empty();
      updates_drop_out |= !ups.empty() && dropout(ups[0].second - 1);
    }
    for (size_t k = 1; k < starts.size() && graph_network; ++k)
      if (els[starts[k] - 1].unit)
        while (starts[k] + 1 < at[k * period] && !els[starts[k]].unit && els[starts[k]].role == Role::Add) ++starts[k];
    std::vector<Span> out;
    for (size_t k = 0; k < starts.size(); ++k) {
      size_t end = k + 1 < starts.size() ? starts[k + 1] : els.size();
      if (k + 1 == starts.size()) {  // the last: through the units the one before has
        end = end_of_signature(els, starts[k], els.size(), signature(els, out.back().first, out.back().second));
        if (end == SIZE_MAX) end = std::min(els.size(), starts[k] + (out.back().second - out.back().first));
        // and at least through its last scatter and the loose ops after it (where the one before
        // ends in units it returns without: its caller's activation), up to the model's output
        // (F.log_softmax on the last layer's)
        size_t past = at[(k + 1) * period - 1] + 1;
        while (past < els.size() && !els[past].unit && els[past].role != Role::Softmax) ++past;
        end = std::max(end, past);
        if (out.back().second > 1 && !els[out.back().second - 1].unit && els[out.back().second - 1].role == Role::Add)
          while (end < els.size() && !els[end].unit && els[end].role == Role::Add) ++end;  // its residual joins, as the others'
      }
      if (updates_drop_out)
        while (end < els.size() && dropout(end)) ++end;
      else
        while (end > starts[k] + 1 && dropout(end - 1)) --end;
      // An update made by an MLP after the aggregation (GIN's) ends at its last weight op: a
      // norm and activation after it are the model's, between layers. A graph network's
      // updates each keep what follows their weights (norm, activation).
      if (const Span mlp = update_mlp(els, {starts[k], end}); mlp.second > mlp.first && !graph_network) {
        end = mlp.second;
        while (residual && end < els.size() && !els[end].unit && els[end].role == Role::Add) ++end;
      }
      // A message-passing layer returns its aggregation (and its self term): the norm and
      // activation after it are its caller's, between layers, as PyTorch Geometric's convs
      // leave them (x = F.relu(conv(x, edge_index))), and so is a residual sum after them
      // (x + F.relu(conv(x))). A graph network's updates keep theirs.
      if (!graph_network) {
        size_t last = end;
        while (last > starts[k] && !is_scatter(els[last - 1])) --last;
        auto after = [&](size_t j) { return els[j].unit && (els[j].role == Role::Activation || els[j].role == Role::Norm); };
        auto sum = [&](size_t j) { return !els[j].unit && els[j].role == Role::Add; };
        size_t trimmed = end;
        while (trimmed > last && (after(trimmed - 1) || sum(trimmed - 1))) --trimmed;
        while (trimmed < end && sum(trimmed)) ++trimmed;  // sums before any of them are the layer's (its self term, its bias)
        // A layer that norms its own sums after the aggregation (a GPS layer's: each branch
        // added back and normed, then its feed-forward's) ends with the last of them too.
        bool norms_sums = false;
        for (size_t j = last; j + 1 < trimmed && !norms_sums; ++j) norms_sums = sum(j) && els[j + 1].unit && els[j + 1].role == Role::Norm;
        if (last > starts[k] && !norms_sums) end = trimmed;
      }
      // A layer has weights: scatters without any between them are one computation's parts
      // (GraphSAGE's sum of messages and its count of them for the mean).
      if (std::none_of(els.begin() + long(starts[k]), els.begin() + long(end), [](const Element& e) { return e.unit && e.role == Role::Weight; }))
        return {};
      out.push_back({starts[k], end});
    }
    // The layers between the first and the last are alike: where they alternate, each is a
    // part of a layer (a graph network's edge, node and global updates, each with weights).
    for (size_t k = 2; k + 1 < out.size(); ++k)
      if (signature(els, out[k].first, out[k].second) != signature(els, out[1].first, out[1].second)) return {};
    return out;
  };
  // The fewest scatters per layer whose pattern repeats and whose layers all hold weights.
  for (size_t p = 1; p <= at.size() / 2; ++p) {
    if (at.size() % p) continue;
    bool same = true;
    for (size_t i = p; i < at.size() && same; ++i) same = els[at[i]].op == els[at[i - p]].op;
    if (!same) continue;
    if (std::vector<Span> out = layers(p); !out.empty()) return out;
  }
  return {};
}

}  // namespace strata::annot::infer
