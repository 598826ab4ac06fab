// Fitting labels into blocks: measured with a per-character advance table (no GUI calls),
// truncated at a UTF-8 character boundary with an ellipsis. Kernel and op names get a short
// form ("at::native::foo_kernel<...>(...)" → "foo_kernel") for when the full one does not fit.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace strata::render {

struct FontMetrics {
  float advance[128] = {};  // ASCII advances in px
  float other = 7.0f;       // advance of any non-ASCII character
  float ellipsis = 10.0f;   // width of "…"
  float height = 13.0f;
  static FontMetrics monospace(float advance, float height);  // tests and headless sizing
  float width(std::string_view s) const;
};

struct FittedLabel {
  uint32_t bytes = 0;     // bytes of the text to draw (0: draw nothing)
  bool ellipsis = false;  // draw "…" after them
  float width = 0;        // px of the drawn text including the ellipsis
};

// Fits `text` into `max_px`. Returns bytes == 0 when not even one character and the ellipsis
// fit (or the text is empty). Never cuts inside a UTF-8 sequence.
FittedLabel fit_label(std::string_view text, float max_px, const FontMetrics& f, uint32_t min_chars = 1);

// The name without return type, namespaces, template arguments and parameter list:
// "void at::native::(anonymous namespace)::foo<float, 4>(int, float*)" → "foo". A component
// that means nothing alone keeps its template arguments ("cutlass::Kernel2<gemm_bf16…>" →
// "Kernel2<gemm_bf16…>"). Returns `name` itself when there is nothing to strip.
std::string_view short_name(std::string_view name);
// Short names for a list shown together: where two different names shorten alike, longer ones
// that tell them apart ("nchwToNhwcKernel<float>", "nchwToNhwcKernel<c10::Half>").
std::vector<std::string_view> distinct_short_names(const std::vector<std::string_view>& names);

}  // namespace strata::render
