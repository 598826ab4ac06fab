// Where a frame's time goes: the parts of building the UI (the timeline's layout and draw
// lists, each panel and tab) timed as they run, then ImGui's render, GL and the swap, and
// the vertices each window's draw list holds. The frame benchmark (bench.cpp) prints their
// percentiles so that a part whose cost grows shows by name.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::viewer {

struct FrameParts {
  // Names are string literals or the bottom tabs' names (static): they outlive the frame.
  std::vector<std::pair<std::string_view, double>> ms;
  // Vertices in each window's draw list (child windows by their own name: "timeline",
  // "details", "bottom"; the rest as "main"); GL's time follows them under software GL.
  std::vector<std::pair<std::string, size_t>> vertices;
  double nested_ms = 0;  // the parts finished inside the part now running (its time excludes them)

  void clear() {
    ms.clear();
    vertices.clear();
    nested_ms = 0;
  }
};

// Times a part of the frame from construction to destruction; parts nested inside it are
// counted as themselves, not twice.
class PartTimer {
 public:
  PartTimer(FrameParts& parts, std::string_view name)
      : parts_(parts), name_(name), outer_nested_(parts.nested_ms), t0_(std::chrono::steady_clock::now()) {
    parts_.nested_ms = 0;
  }
  PartTimer(const PartTimer&) = delete;
  PartTimer& operator=(const PartTimer&) = delete;
  ~PartTimer() {
    const double total = elapsed_ms();
    parts_.ms.emplace_back(name_, total - parts_.nested_ms);
    parts_.nested_ms = outer_nested_ + total;
  }
  double elapsed_ms() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0_).count();
  }

 private:
  FrameParts& parts_;
  std::string_view name_;
  double outer_nested_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace strata::viewer
