// The Batch size tab: core's prediction for the open trace (`strata predict FILE`, an
// estimate from one batch size) drawn as two charts against the batch on a log scale: memory
// at the peak (allocated, reserved, the device's capacity) and throughput (samples/s), with
// the measured batch and the largest that fits marked, and the batches beyond the measured
// ones' reach shaded as extrapolated.
#include "app/viewer/viewer.h"

#include <imgui.h>

#include <algorithm>
#include <cctype>
#include <cmath>

namespace strata::viewer {

namespace {

struct Chart {
  ImVec2 p0, p1;  // the plot area
  double x0, x1, ymax;
  float x(double batch) const { return p0.x + float((std::log2(batch) - x0) / std::max(1e-9, x1 - x0)) * (p1.x - p0.x); }
  float y(double v) const { return p1.y - float(v / std::max(1e-9, ymax)) * (p1.y - p0.y); }
};

// Axes with ticks (the batches under them, four steps of `ymax` beside them, `label` naming
// each), the extrapolated batches shaded and the largest batch that fits; returns the plot area.
Chart frame(Viewer& v, const BatchPrediction& p, const char* title, double ymax, std::string (*label)(double), float w, float h) {
  const float s = v.scale;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 o = ImGui::GetCursorScreenPos();
  ImGui::Dummy(ImVec2(w, h));
  const float lh = ImGui::GetTextLineHeight();
  Chart c{ImVec2(o.x + 76 * s, o.y + lh + 4 * s), ImVec2(o.x + w - 8 * s, o.y + h - lh - 6 * s),
          std::log2(double(p.curve.front().batch)), std::log2(double(p.curve.back().batch)), ymax};
  dl->AddText(o, IM_COL32(235, 235, 240, 255), title);
  dl->AddRectFilled(c.p0, c.p1, IM_COL32(34, 35, 39, 255));
  for (int k = 0; k <= 4; ++k) {
    const float y = c.y(ymax * k / 4);
    const std::string t = label(ymax * k / 4);
    dl->AddLine(ImVec2(c.p0.x - 4 * s, y), ImVec2(c.p1.x, y), IM_COL32(255, 255, 255, k == 0 ? 60 : 14));
    dl->AddText(ImVec2(c.p0.x - 6 * s - ImGui::CalcTextSize(t.c_str()).x, y - lh * 0.5f), IM_COL32(160, 160, 170, 255), t.c_str());
  }
  const double reach = kMeasuredReach * double(p.largest_measured);
  if (double(p.curve.back().batch) > reach) {  // where the figures are assumed, not seen
    const float x = std::max(c.p0.x, c.x(reach));
    dl->AddRectFilled(ImVec2(x, c.p0.y), c.p1, IM_COL32(255, 255, 255, 10));
    dl->AddText(ImVec2(x + 3 * s, c.p1.y - lh - 2 * s), IM_COL32(150, 150, 160, 255), "extrapolated");
  }
  for (const BatchPrediction::Row& r : p.curve) {
    const std::string t = std::to_string(r.batch);
    const float x = c.x(double(r.batch));
    dl->AddLine(ImVec2(x, c.p0.y), ImVec2(x, c.p1.y), IM_COL32(255, 255, 255, 14));
    if (x + ImGui::CalcTextSize(t.c_str()).x <= c.p1.x + 20 * s)
      dl->AddText(ImVec2(x - ImGui::CalcTextSize(t.c_str()).x * 0.5f, c.p1.y + 2 * s), IM_COL32(160, 160, 170, 255), t.c_str());
  }
  if (p.largest_batch > 0 && p.largest_batch != INT64_MAX) {
    const float x = c.x(double(p.largest_batch));
    if (x <= c.p1.x) {
      dl->AddLine(ImVec2(x, c.p0.y), ImVec2(x, c.p1.y), IM_COL32(240, 90, 70, 200), 1.5f * s);
      const std::string t = p.largest_extrapolated ? "fits up to about here" : "fits up to " + std::to_string(p.largest_batch);
      const float tw = ImGui::CalcTextSize(t.c_str()).x;
      dl->AddText(ImVec2(x + 3 * s + tw > c.p1.x ? x - 3 * s - tw : x + 3 * s, c.p0.y + 2 * s), IM_COL32(240, 120, 100, 255), t.c_str());
    }
  }
  return c;
}

void polyline(const Chart& c, const BatchPrediction& p, double (*value)(const BatchPrediction::Row&), ImU32 colour, float thickness) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  std::vector<ImVec2> pts;
  for (const BatchPrediction::Row& r : p.curve) pts.push_back(ImVec2(c.x(double(r.batch)), c.y(value(r))));
  dl->AddPolyline(pts.data(), int(pts.size()), colour, 0, thickness);
  for (size_t i = 0; i < p.curve.size(); ++i)
    if (p.curve[i].measured) {
      dl->AddCircleFilled(pts[i], 4.5f, IM_COL32(255, 255, 255, 255));
      dl->AddText(ImVec2(pts[i].x + 6, pts[i].y - ImGui::GetTextLineHeight()), IM_COL32(220, 220, 230, 255), "measured");
    }
}

}  // namespace

void draw_batch_tab(Viewer& v) {
  if (!v.trace) return;
  const BatchPrediction& p = v.trace->batch;
  if (p.curve.empty()) {
    ImGui::TextDisabled("No batch-size estimate: %s.", v.trace->batch_error.c_str());
    return;
  }
  const float s = v.scale;
  const BatchPoint& m = p.points.front();
  ImGui::Text("Measured: batch %lld, %s per iteration, %.1f samples/s, peak %s allocated.", (long long)m.batch,
              format_duration(m.iteration).c_str(), double(m.batch) * 1e9 / double(std::max<Ns>(m.iteration, 1)),
              format_bytes(double(m.peak_allocated)).c_str());
  if (std::string largest = largest_batch_text(p); !largest.empty()) {
    largest[0] = char(std::toupper(static_cast<unsigned char>(largest[0])));
    text_wrapped(v, largest + ".");
  }
  ImGui::TextDisabled("%s", p.estimate ? "An estimate from this one trace (strata predict A B C fits traces at several batch sizes)."
                                       : "Fitted to traces at several batch sizes.");
  const float w = std::max(200 * s, (ImGui::GetContentRegionAvail().x - 16 * s) * 0.5f);
  const float notes_h = float(p.notes.size() * 2) * ImGui::GetTextLineHeightWithSpacing();
  const float h = std::max(140 * s, ImGui::GetContentRegionAvail().y - notes_h - 8 * s);
  const BatchPrediction::Row& last = p.curve.back();
  double mem_max = double(std::max(last.peak_reserved, last.peak_allocated));
  if (p.capacity > 0) mem_max = std::max(mem_max, double(p.capacity));
  Chart mem = frame(v, p, "Memory at the peak (allocated; reserved, lighter; capacity, dashed)", mem_max,
                    [](double b) { return b > 0 ? format_bytes(b) : std::string("0"); }, w, h);
  if (p.capacity > 0) {
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const float y = mem.y(double(p.capacity));
    for (float x = mem.p0.x; x < mem.p1.x; x += 8 * s) dl->AddLine(ImVec2(x, y), ImVec2(x + 4 * s, y), IM_COL32(250, 220, 120, 220), s);
  }
  polyline(mem, p, [](const BatchPrediction::Row& r) { return double(r.peak_reserved); }, IM_COL32(204, 121, 167, 110), 2 * s);
  polyline(mem, p, [](const BatchPrediction::Row& r) { return double(r.peak_allocated); }, IM_COL32(204, 121, 167, 255), 2 * s);
  ImGui::SameLine(0, 16 * s);
  double tp_max = 0;
  for (const BatchPrediction::Row& r : p.curve) tp_max = std::max(tp_max, r.samples_per_s);
  Chart tp = frame(v, p, "Throughput (samples/s)", tp_max, [](double x) { return strprintf("%.0f", x); }, w, h);
  polyline(tp, p, [](const BatchPrediction::Row& r) { return r.samples_per_s; }, IM_COL32(0, 158, 115, 255), 2 * s);
  // The figures under the cursor.
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  for (const Chart* c : {&mem, &tp}) {
    if (mouse.x < c->p0.x || mouse.x > c->p1.x || mouse.y < c->p0.y || mouse.y > c->p1.y) continue;
    const BatchPrediction::Row* near = &p.curve.front();
    for (const BatchPrediction::Row& r : p.curve)
      if (std::abs(c->x(double(r.batch)) - mouse.x) < std::abs(c->x(double(near->batch)) - mouse.x)) near = &r;
    ImGui::SetTooltip("batch %lld%s: peak %s allocated, %s reserved\n%s per iteration, %.1f samples/s%s", (long long)near->batch,
                      near->measured ? " (measured)" : "", format_bytes(double(near->peak_allocated)).c_str(),
                      format_bytes(double(near->peak_reserved)).c_str(), format_duration(near->iteration).c_str(),
                      near->samples_per_s, near->fits ? "" : "\ndoes not fit the device");
  }
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  for (const std::string& n : p.notes) text_wrapped(v, n);
  ImGui::PopStyleColor();
}

}  // namespace strata::viewer
