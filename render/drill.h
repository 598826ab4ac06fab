// Multi-scale drill-down on the timeline's items, GUI-free: the focus path (breadcrumbs),
// children of an item for the levels view (with noise reduction), what belongs to a selected
// item (for highlighting and flow arrows) and the GPU work under an item.
#pragma once

#include "render/timeline.h"

#include <string>
#include <utility>
#include <vector>

namespace strata::render {

// Tier spans containing the item (coarse to fine), then its event ancestors, then the item.
// A GPU op is placed by its launch: ... ▸ the CPU op ▸ the kernel.
std::vector<ItemRef> focus_path(const Timeline& tl, ItemRef r);

struct Block {
  ItemRef ref;          // the child (the first one when merged)
  Ns start = 0, end = 0;
  Ns busy = 0;          // summed durations (merged blocks: of all of them)
  SiblingBlock::Kind kind = SiblingBlock::Single;  // SameName: a run "name ×N"; Group: small children merged
  uint32_t merged = 1;  // children it stands for
};

// The top of the levels view: level 0 of the first tier, else the depth-0 events of the
// training loop's thread (the annotation's main track).
std::vector<Block> level_roots(const Timeline& tl);
// Children of an item: the next tier level or tier, then the event's nested events, then
// (for a launch) the GPU op it launched. With `reduce`, children are reduced by the
// annotation's rule for siblings (reduce_siblings); without, each is its own block.
std::vector<Block> children_of(const Timeline& tl, ItemRef parent, const ReduceOptions* reduce);

// What belongs to `sel`: ancestors, launches and the GPU ops they launched, the forward or
// backward counterpart, tier spans containing it, and `gpu_ops` (its work, from work_of).
// `flows` gets (launch, GPU op) pairs.
void related_of(const Timeline& tl, ItemRef sel, const std::vector<EventId>& gpu_ops, Highlight& hl,
                std::vector<std::pair<EventId, EventId>>* flows, size_t cap = 4096);

// The item's GPU work and what bounds it (core's node_work / event_work).
WorkFigures work_of(const Timeline& tl, ItemRef r);

// Resolves "Iteration 38/Backward/layer2" (names or prefixes, '/'-separated) from the roots
// down through children_of. Returns an invalid ref when the first part matches nothing; else
// the deepest match.
ItemRef resolve_focus(const Timeline& tl, std::string_view path);

// The item `r` of `from` in `to`, a timeline of the same trace grown longer (a recording read
// again): the event or tier span with the same name and start. Invalid when it is gone.
ItemRef find_again(const Timeline& from, ItemRef r, const Timeline& to);

}  // namespace strata::render
