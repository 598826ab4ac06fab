// The frame benchmark (`strata view FILE --bench-frames N`): a scripted zoom from the whole
// trace down to one kernel, each frame finished on the GPU before the next, and where the
// frames' time went, part by part, as percentiles.
#include "app/cli.h"
#include "app/viewer/viewer.h"

#include <imgui.h>

#include <GLFW/glfw3.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

namespace strata::viewer {

namespace {

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = size_t(std::ceil(p / 100.0 * double(v.size()))) - 1;
  return v[std::min(i, v.size() - 1)];
}

// The kernel to zoom to: the first after the middle of the trace, on the busiest stream.
EventId zoom_target(const TraceModel& m) {
  EventId target = kNoEvent;
  const Ns mid = (m.time_begin + m.time_end) / 2;
  size_t most = 0;
  for (const Track& t : m.tracks) {
    if (t.kind != TrackKind::GpuStream || t.events.size() <= most) continue;
    for (const IndexRange& l : t.levels) {
      auto it = std::lower_bound(m.ev.start.begin() + l.begin, m.ev.start.begin() + l.end, mid);
      for (; it != m.ev.start.begin() + l.end; ++it) {
        EventId e = EventId(it - m.ev.start.begin());
        if (m.ev.category(e) == Cat::Kernel) {
          target = e;
          most = t.events.size();
          break;
        }
      }
    }
  }
  return target;
}

// One figure per frame for each name (a part's time, a window's vertices), in the order the
// names first came; a name missing from a frame counts 0 there, so that percentiles are over
// all frames.
struct Series {
  std::vector<std::string> names;
  std::map<std::string, std::vector<double>> values;

  void add(size_t frame, const std::string& name, double value) {
    auto [it, fresh] = values.try_emplace(name);
    if (fresh) names.push_back(name);
    std::vector<double>& s = it->second;
    if (s.size() == frame + 1) s.back() += value;  // a part run twice in a frame: summed
    else s.resize(frame, 0.0), s.push_back(value);
  }

  void print(const char* title, int decimals, size_t frames) {
    std::printf("%-34s p50      p90      p99      max\n", title);
    for (const std::string& n : names) {
      std::vector<double>& s = values[n];
      s.resize(frames, 0.0);
      std::printf("  %-28s %8.*f %8.*f %8.*f %8.*f\n", n.c_str(), decimals, percentile(s, 50), decimals, percentile(s, 90),
                  decimals, percentile(s, 99), decimals, percentile(s, 100));
    }
  }
};

}  // namespace

void bench_frames(Viewer& v, int frames) {
  const TraceModel& m = *v.trace->model;
  const EventId target = zoom_target(m);
  const Ns mid = (m.time_begin + m.time_end) / 2;
  double a0 = double(m.time_begin), a1 = double(m.time_end);
  double b0 = target != kNoEvent ? double(m.ev.start[target]) : double(mid);
  double b1 = target != kNoEvent ? double(m.ev.end(target)) : double(mid) + 1000;
  b1 = std::max(b1, b0 + 100);
  std::vector<double> layout_ms, frame_ms;
  Series part_ms, vertices;
  v.capture.finish_gl = true;
  const bool verbose = std::getenv("STRATA_BENCH_VERBOSE") != nullptr;
  float content_h = v.trace->timeline.content_height(v.timeline.rows);
  for (int i = 0; i < frames; ++i) {
    // Zoom in log space towards the kernel, scrolling through the rows as it goes.
    double f = frames > 1 ? double(i) / double(frames - 1) : 1.0;
    double span = std::exp(std::log(a1 - a0) + (std::log(b1 - b0) - std::log(a1 - a0)) * f);
    double c = (a0 + a1) * 0.5 + ((b0 + b1) * 0.5 - (a0 + a1) * 0.5) * std::min(1.0, f * 4);
    v.timeline.view.fit(c - span * 0.5, c + span * 0.5, 0);
    v.timeline.scroll_y = float(i % 4) / 4.0f * std::max(0.0f, content_h - v.timeline.height);
    auto t0 = std::chrono::steady_clock::now();
    glfwPollEvents();
    frame(v);
    frame_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    layout_ms.push_back(v.timeline.layout_ms);
    for (const auto& [name, ms] : v.capture.parts.ms) part_ms.add(size_t(i), std::string(name), ms);
    part_ms.add(size_t(i), "whole frame", frame_ms.back());
    for (const auto& [name, n] : v.capture.parts.vertices) vertices.add(size_t(i), name, double(n));
    if (verbose) {
      std::string each;
      for (const auto& [name, ms] : v.capture.parts.ms) each += strprintf(" %.*s %.3f", int(name.size()), name.data(), ms);
      std::printf("frame %3d span %s scroll %6.0f frame %7.3f ms (%s) items %zu rects %zu texts %zu\n", i,
                  fit_column(format_duration(span), 10).c_str(), double(v.timeline.scroll_y), frame_ms.back(), each.c_str() + 1,
                  v.timeline.frame.items.size(), v.timeline.frame.rects.size(), v.timeline.frame.texts.size());
    }
  }
  std::printf("frames %d at %dx%d, zoom from %s to %s\n", frames, int(v.timeline.view.width_px), int(ImGui::GetIO().DisplaySize.y),
              format_duration(a1 - a0).c_str(), format_duration(b1 - b0).c_str());
  std::printf("timeline layout ms: p50 %.3f  p90 %.3f  p99 %.3f  max %.3f\n", percentile(layout_ms, 50),
              percentile(layout_ms, 90), percentile(layout_ms, 99), percentile(layout_ms, 100));
  std::printf("whole frame ms:     p50 %.3f  p90 %.3f  p99 %.3f  max %.3f\n", percentile(frame_ms, 50),
              percentile(frame_ms, 90), percentile(frame_ms, 99), percentile(frame_ms, 100));
  part_ms.print("where the frames' time went, ms", 3, size_t(frames));
  vertices.print("vertices per window", 0, size_t(frames));
  size_t events = m.ev.size();
  size_t view_bytes = v.trace->timeline.tiers().bytes() + v.trace->timeline.view_bytes();
  std::printf("events %zu, view bytes %zu (%.3f per event), model bytes %zu\n", events, view_bytes,
              events ? double(view_bytes) / double(events) : 0.0, m.bytes());
  v.capture.finish_gl = false;
}

}  // namespace strata::viewer
