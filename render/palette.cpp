#include "render/palette.h"

#include <algorithm>
#include <cmath>

namespace strata::render {

namespace {

struct Rgb { float r, g, b; };

Rgb unpack(Rgba c) { return {float(c & 255) / 255.f, float((c >> 8) & 255) / 255.f, float((c >> 16) & 255) / 255.f}; }
Rgba pack(Rgb c, uint8_t a = 255) {
  auto q = [](float v) { return uint8_t(std::lround(std::clamp(v, 0.f, 1.f) * 255.f)); };
  return rgba(q(c.r), q(c.g), q(c.b), a);
}

// Okabe & Ito (2008), "Color Universal Design", and two neutrals.
constexpr Rgba kOrange = rgba(230, 159, 0), kSky = rgba(86, 180, 233), kGreen = rgba(0, 158, 115),
               kYellow = rgba(240, 228, 66), kBlue = rgba(0, 114, 178), kVermillion = rgba(213, 94, 0),
               kPurple = rgba(204, 121, 167), kGreyBlue = rgba(120, 140, 170), kGrey = rgba(150, 150, 150);

// The seven chromatic Okabe-Ito hues, for layers.
constexpr Rgba kLayerHues[] = {kSky, kOrange, kGreen, kPurple, kYellow, kBlue, kVermillion};

}  // namespace

Rgba base_colour(Hue h) {
  switch (h) {
    case Hue::Iteration: return kOrange;
    case Hue::Forward: return kSky;
    case Hue::Backward: return kVermillion;
    case Hue::Optimizer: return kGreen;
    case Hue::DataLoading: return kYellow;
    case Hue::Loss: return kPurple;
    case Hue::CpuOp: return rgba(60, 140, 205);
    case Hue::Runtime: return kGreyBlue;
    case Hue::Kernel: return kGreen;
    case Hue::Communication: return kBlue;
    case Hue::Memcpy: return kVermillion;
    case Hue::Memset: return kYellow;
    case Hue::Annotation: return kPurple;
    case Hue::Python: return kGrey;
    default: return kGrey;
  }
}

Rgba darken(Rgba c, float f) {
  Rgb x = unpack(c);
  return pack({x.r * (1 - f), x.g * (1 - f), x.b * (1 - f)}, uint8_t(c >> 24));
}

Rgba lighten(Rgba c, float f) {
  Rgb x = unpack(c);
  return pack({x.r + (1 - x.r) * f, x.g + (1 - x.g) * f, x.b + (1 - x.b) * f}, uint8_t(c >> 24));
}

Rgba with_alpha(Rgba c, uint8_t a) { return (c & 0x00FFFFFFu) | (Rgba(a) << 24); }

Rgba name_colour(Hue h, uint64_t hash) {
  // Five lightness steps around the base: enough to tell neighbours apart.
  static constexpr float kSteps[] = {-0.28f, -0.14f, 0.0f, 0.14f, 0.28f};
  float s = kSteps[(hash >> 7) % 5];
  Rgba b = base_colour(h);
  return s < 0 ? darken(b, -s) : lighten(b, s);
}

Rgba layer_colour(uint64_t hash, bool backward) {
  Rgba b = kLayerHues[hash % std::size(kLayerHues)];
  static constexpr float kSteps[] = {0.0f, 0.18f, 0.36f};
  b = lighten(b, kSteps[(hash >> 11) % 3]);
  return backward ? darken(b, 0.3f) : b;
}

Rgba text_on(Rgba bg) {
  Rgb x = unpack(bg);
  float lum = 0.2126f * x.r + 0.7152f * x.g + 0.0722f * x.b;
  return lum > 0.5f ? rgba(20, 20, 20) : rgba(245, 245, 245);
}

uint64_t name_hash(std::string_view s) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h ^ (h >> 29);
}

}  // namespace strata::render
