// Colours: a colour-blind-safe palette (Okabe & Ito) giving each tier or kind of work its own
// hue family; names vary the lightness within the family, so a kind stays recognisable for
// every reader and the same name always gets the same colour.
#pragma once

#include <cstdint>
#include <string_view>

namespace strata::render {

using Rgba = uint32_t;  // 0xAABBGGRR, as Dear ImGui's IM_COL32 packs it

constexpr Rgba rgba(uint8_t r, uint8_t g, uint8_t b, uint8_t a = 255) {
  return Rgba(r) | (Rgba(g) << 8) | (Rgba(b) << 16) | (Rgba(a) << 24);
}

enum class Hue : uint8_t {
  Iteration,     // orange
  Forward,       // sky blue
  Backward,      // vermillion
  Optimizer,     // bluish green
  DataLoading,   // yellow
  Loss,          // reddish purple
  CpuOp,         // blue
  Runtime,       // grey-blue
  Kernel,        // bluish green
  Communication, // blue: NCCL / RCCL kernels
  Memcpy,        // vermillion
  Memset,        // yellow
  Annotation,    // reddish purple
  Python,        // grey
  Other,         // grey
  Count
};

// The base colour of a hue family.
Rgba base_colour(Hue h);
// A colour of the family, its lightness picked by `name_hash` (a few distinct steps).
Rgba name_colour(Hue h, uint64_t name_hash);
// A layer's colour: hue by the layer name, so a forward layer and its backward share it;
// `backward` darkens it one step.
Rgba layer_colour(uint64_t layer_hash, bool backward);
// Black or white, whichever reads better on `bg`.
Rgba text_on(Rgba bg);
Rgba darken(Rgba c, float f);   // f in [0,1]: 0 unchanged
Rgba lighten(Rgba c, float f);
Rgba with_alpha(Rgba c, uint8_t a);
uint64_t name_hash(std::string_view s);

}  // namespace strata::render
