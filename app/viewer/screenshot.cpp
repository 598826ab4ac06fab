// Screenshots: the back buffer via glReadPixels, written with stb_image_write.
#include "app/viewer/viewer.h"

#include <GL/gl.h>

#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wconversion"
#pragma GCC diagnostic ignored "-Wsign-conversion"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wshadow"
#include <stb/stb_image_write.h>
#pragma GCC diagnostic pop

#include <algorithm>
#include <unordered_map>
#include <vector>

namespace strata::viewer {

namespace {

ImageStats image_stats(const std::vector<unsigned char>& px, int width, int height) {
  ImageStats s;
  s.width = width;
  s.height = height;
  std::unordered_map<uint32_t, uint32_t> counts;
  double luma = 0;
  size_t n = size_t(width) * size_t(height);
  for (size_t i = 0; i < n; ++i) {
    const unsigned char* p = &px[i * 3];
    ++counts[uint32_t(p[0]) << 16 | uint32_t(p[1]) << 8 | p[2]];
    luma += 0.2126 * p[0] + 0.7152 * p[1] + 0.0722 * p[2];
  }
  uint32_t bg = 0, most = 0;
  for (auto [c, k] : counts)
    if (k > most) most = k, bg = c;
  size_t off = 0;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char* p = &px[i * 3];
    int d = std::abs(int(p[0]) - int(bg >> 16)) + std::abs(int(p[1]) - int((bg >> 8) & 255)) + std::abs(int(p[2]) - int(bg & 255));
    if (d > 24) ++off;
  }
  s.distinct_colours = counts.size();
  s.non_background = n ? double(off) / double(n) : 0;
  s.mean_luma = n ? luma / double(n) : 0;
  return s;
}

}  // namespace

bool save_screenshot(const std::string& path, int width, int height, std::string& error, ImageStats* stats) {
  std::vector<unsigned char> px(size_t(width) * size_t(height) * 3);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadBuffer(GL_BACK);
  glReadPixels(0, 0, width, height, GL_RGB, GL_UNSIGNED_BYTE, px.data());
  // OpenGL's rows go bottom-up.
  std::vector<unsigned char> flipped(px.size());
  size_t row = size_t(width) * 3;
  for (int y = 0; y < height; ++y)
    std::copy_n(px.data() + size_t(height - 1 - y) * row, row, flipped.data() + size_t(y) * row);
  if (stats) *stats = image_stats(px, width, height);
  if (!stbi_write_png(path.c_str(), width, height, 3, flipped.data(), int(row))) {
    error = "cannot write " + path;
    return false;
  }
  return true;
}

}  // namespace strata::viewer
