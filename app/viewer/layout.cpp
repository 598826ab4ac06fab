// Panel sizes a person sets: splitters between the timeline, the details panel and the bottom
// panel; dialogs (and lists that float over the panels) kept inside the window, however small
// it is or becomes; and tooltips whose text wraps inside it.
#include "app/viewer/viewer.h"

#include "render/elide.h"

#include <imgui.h>

#include <algorithm>
#include <cstdarg>

namespace strata::viewer {

bool splitter(const char* id, bool vertical, float thickness, float length, float& size, float min_size, float max_size, bool after) {
  const ImVec2 p = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton(id, vertical ? ImVec2(thickness, length) : ImVec2(length, thickness));
  const bool hovered = ImGui::IsItemHovered(), active = ImGui::IsItemActive();
  if (hovered || active) ImGui::SetMouseCursor(vertical ? ImGuiMouseCursor_ResizeEW : ImGuiMouseCursor_ResizeNS);
  // The size follows the pointer from where the drag began (kept in ImGui's storage).
  ImGuiStorage* st = ImGui::GetStateStorage();
  const ImGuiID key = ImGui::GetID(id);
  if (ImGui::IsItemActivated()) st->SetFloat(key, size);
  if (active) {
    const ImVec2 d = ImGui::GetMouseDragDelta(ImGuiMouseButton_Left, 0.0f);
    const float moved = vertical ? d.x : d.y;
    size = std::clamp(st->GetFloat(key, size) + (after ? -moved : moved), min_size, std::max(min_size, max_size));
  }
  // A grip in the middle; the whole bar lights up under the pointer.
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImU32 c = ImGui::GetColorU32(active ? ImGuiCol_SeparatorActive : hovered ? ImGuiCol_SeparatorHovered : ImGuiCol_Separator);
  const ImVec2 mid(p.x + (vertical ? thickness : length) * 0.5f, p.y + (vertical ? length : thickness) * 0.5f);
  if (hovered || active) {
    if (vertical) dl->AddLine(ImVec2(mid.x, p.y), ImVec2(mid.x, p.y + length), c, 2.0f);
    else dl->AddLine(ImVec2(p.x, mid.y), ImVec2(p.x + length, mid.y), c, 2.0f);
  }
  for (int i = -1; i <= 1; ++i) {
    const float o = float(i) * 5.0f;
    dl->AddCircleFilled(vertical ? ImVec2(mid.x, mid.y + o) : ImVec2(mid.x + o, mid.y), 1.5f, c);
  }
  return active;
}

void place_dialog(float w, float h, float x, float y, bool centred) {
  const ImVec2 d = ImGui::GetIO().DisplaySize;
  const float margin = 8.0f;
  const ImVec2 most(std::max(1.0f, d.x - 2 * margin), std::max(1.0f, d.y - 2 * margin));
  const ImVec2 size(std::min(w, most.x), std::min(h, most.y));
  ImGui::SetNextWindowSize(size, ImGuiCond_Appearing);
  if (centred) ImGui::SetNextWindowPos(ImVec2(d.x * 0.5f, d.y * 0.5f), ImGuiCond_Appearing, ImVec2(0.5f, 0.5f));
  else ImGui::SetNextWindowPos(ImVec2(std::clamp(x, margin, d.x - margin - size.x), std::clamp(y, margin, d.y - margin - size.y)), ImGuiCond_Appearing);
  ImGui::SetNextWindowSizeConstraints(ImVec2(std::min(240.0f, most.x), std::min(120.0f, most.y)), most);
}

bool begin_dialog(Viewer& v, const char* title, bool* open, int flags) {
  // The main window's background is the cleared screen: a window over it takes the popups'
  // shade and a border.
  ImGui::PushStyleColor(ImGuiCol_WindowBg, ImGui::GetStyleColorVec4(ImGuiCol_PopupBg));
  ImGui::PushStyleVar(ImGuiStyleVar_WindowBorderSize, 1.0f);
  const bool shown = ImGui::Begin(title, open, flags | ImGuiWindowFlags_NoSavedSettings);
  ImGui::PopStyleVar();
  ImGui::PopStyleColor();
  if (!shown) {
    ImGui::End();
    return false;
  }
  note_dialog(v, title);
  return true;
}

void note_dialog(Viewer& v, const char* name) {
  // Moved partly out, or left outside when the window shrank: back in.
  const ImVec2 d = ImGui::GetIO().DisplaySize, p = ImGui::GetWindowPos(), size = ImGui::GetWindowSize();
  const ImVec2 in(std::clamp(p.x, 0.0f, std::max(0.0f, d.x - size.x)), std::clamp(p.y, 0.0f, std::max(0.0f, d.y - size.y)));
  if (in.x != p.x || in.y != p.y) ImGui::SetWindowPos(in);
  v.panels.dialogs.push_back({name, {in.x, in.y, size.x, size.y}});
}

void note_item_box(Viewer& v, const char* name) {
  const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
  v.panels.dialogs.push_back({name, {a.x, a.y, b.x - a.x, b.y - a.y}});
}

void text_wrapped(const Viewer& v, std::string_view text) {
  for (std::string_view line : render::wrap_at_spaces(text, std::max(ImGui::GetContentRegionAvail().x, 1.0f), v.metrics))
    ImGui::TextUnformatted(line.data(), line.data() + line.size());
}

void begin_tooltip(Viewer& v) {
  ImGui::BeginTooltip();
  // Dear ImGui sizes a tooltip to its text: a kernel's name hundreds of characters long ran off
  // both edges of the screen. It wraps at 40 ems, or where the window ends.
  const float room = ImGui::GetIO().DisplaySize.x - 2 * (8 * v.scale + ImGui::GetStyle().WindowPadding.x);
  ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + std::clamp(room, 80 * v.scale, 40 * ImGui::GetFontSize()));
}

void end_tooltip(Viewer& v) {
  ImGui::PopTextWrapPos();
  const ImVec2 p = ImGui::GetWindowPos(), size = ImGui::GetWindowSize();
  v.panels.dialogs.push_back({"tooltip", {p.x, p.y, size.x, size.y}});
  ImGui::EndTooltip();
}

void tooltip(Viewer& v, const char* fmt, ...) {
  begin_tooltip(v);
  va_list args;
  va_start(args, fmt);
  ImGui::TextV(fmt, args);
  va_end(args);
  end_tooltip(v);
}

}  // namespace strata::viewer
