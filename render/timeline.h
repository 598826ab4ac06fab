// The timeline's rows and their per-frame layout: sections (annotation tiers, each process,
// memory), lanes (a tier, a CPU thread, a GPU stream, a counter) and rows (one nesting level
// each). `Timeline::layout` turns a view into a draw list the app hands to Dear ImGui; it
// also keeps what was laid out for hit testing. No GUI calls here.
#pragma once

#include "core/trace_model.h"
#include "render/labels.h"
#include "render/level_layout.h"
#include "render/palette.h"
#include "render/tiers.h"
#include "render/time_view.h"

#include <set>
#include <string>
#include <vector>

namespace strata::render {

// Something on the timeline a user can point at.
struct ItemRef {
  enum Kind : uint8_t { None, Event, TierSpan };
  Kind kind = None;
  uint32_t tier = 0;   // TierSpan: which tier
  uint32_t index = 0;  // Event: EventId; TierSpan: span index in the tier
  bool operator==(const ItemRef&) const = default;
  bool valid() const { return kind != None; }
  static ItemRef event(EventId e) { return {Event, 0, e}; }
  static ItemRef span(uint32_t t, uint32_t i) { return {TierSpan, t, i}; }
};

enum class LaneKind : uint8_t { Tier, Track, Counter };

struct CounterTrack {
  std::string title;
  std::vector<Ns> ts;
  std::vector<double> value;
  double max_value = 0;
  Ns max_at = 0;
  bool bytes = false;  // values are bytes (memory)
  // Memory series: the device, what the allocator reserved (empty when not recorded), and the
  // device's capacity (0: unknown).
  int8_t device_type = -1;
  int16_t device_id = -1;
  std::vector<double> reserved;
  double max_reserved = 0;
  double capacity = 0;
  double axis_max = 0;  // the lane's top: the highest value, reserved too, and a near capacity
};

struct Lane {
  LaneKind kind = LaneKind::Track;
  uint32_t index = 0;       // tier, track or counter index
  uint32_t section = 0;
  std::string title;
  uint16_t levels = 1;      // rows when expanded
};

struct Section {
  std::string title;
  std::vector<uint32_t> lanes;
};

struct DrawRect {
  float x0, y0, x1, y1;
  Rgba fill;
  uint8_t flags;  // DrawFlags
};
enum DrawFlags : uint8_t { kFolded = 1, kSelected = 2, kRelated = 4, kMatch = 8, kExposed = 16 };  // kExposed: a strip, not an item

struct DrawText {
  float x, y;
  Rgba colour;
  uint32_t offset, len;  // into FrameLayout::text (copied)
  float text_w;          // width of the text before the ellipsis
  bool ellipsis;
};

// One laid-out row, for hit testing and for the app's row labels and arrows.
struct RowHit {
  float y0, y1;
  LaneKind kind;
  uint32_t lane, source;  // lane index; tier / track / counter index
  uint16_t depth;
  uint32_t item_begin, item_end;  // into FrameLayout::items
};

// Lane and section headers in the gutter.
struct GutterLabel {
  float y0, y1;
  bool section;
  uint32_t index;  // section or lane
  bool collapsed;
  bool expandable;
};

struct FrameLayout {
  std::vector<DrawRect> rects;
  std::vector<DrawText> texts;
  std::string text;
  std::vector<LayoutItem> items;
  std::vector<RowHit> rows;
  std::vector<GutterLabel> gutter;
  std::vector<DrawRect> counter_rects;  // counter plots, drawn under everything else
  size_t folded_items = 0, labels = 0;
  float pinned_h = 0;  // the pinned rows' height at the top; the rest scrolls below it
  void clear();
};

// What to highlight: the selection and what belongs to it, and search matches.
struct Highlight {
  ItemRef selected;
  std::vector<EventId> related;        // sorted
  std::vector<uint64_t> related_spans;  // (tier << 32 | span), sorted
  const std::vector<EventId>* matches = nullptr;  // sorted by id
};

class Timeline;

// What a person did to the rows: collapsed sections, lanes collapsed to their first row, and
// lanes pinned to the top (they stay while the rest scrolls). The viewer keeps it, keyed by
// titles, so that it outlives the timeline it was made on: a recording read again builds a new
// timeline and keeps the rows as they were.
struct RowState {
  std::set<std::string> collapsed, pinned;  // section and lane keys
  // Per section and lane of the timeline last passed to resolve().
  std::vector<uint8_t> section_closed, lane_closed, lane_pinned;

  void resolve(const Timeline& tl);
  void toggle_section(const Timeline& tl, uint32_t si);
  void toggle_lane(const Timeline& tl, uint32_t li);
  void toggle_pin(const Timeline& tl, uint32_t li);
  bool section_collapsed(uint32_t si) const { return si < section_closed.size() && section_closed[si]; }
  bool lane_collapsed(uint32_t li) const { return li < lane_closed.size() && lane_closed[li]; }
  bool lane_is_pinned(uint32_t li) const { return li < lane_pinned.size() && lane_pinned[li]; }
  // A new trace's rows: the annotation tiers pinned, and CPU threads with deep stacks collapsed
  // while they would push the GPU streams below `visible_h` pixels.
  void defaults(const Timeline& tl, float visible_h);
};

struct TimelineStyle {
  float row_h = 20.0f;
  float section_h = 24.0f;
  float lane_gap = 6.0f;
  float counter_h = 48.0f;
  float min_px = 3.0f;
  float text_pad = 4.0f;
};

class Timeline {
 public:
  void build(const TraceModel& m);  // sections and lanes for the model's tracks and counters
  // The annotation's tiers in the annotation section; the panels read its figures. It must
  // outlive the timeline (null: no tiers).
  void set_annotation(const Annotation* a);
  const Tiers& tiers() const { return tiers_; }
  const TraceModel* model() const { return m_; }
  const Annotation* annotation() const { return a_; }
  // The annotation tree's node a tier span stands for (kNoNode for events and without one).
  NodeId node_of(ItemRef r) const;

  float content_height(const RowState& c) const;
  // Lays out what is visible: the view horizontally, [scroll_y, scroll_y + view_h) vertically.
  void layout(const TimeView& v, float scroll_y, float view_h, const FontMetrics& f, const Highlight& hl,
              const RowState& c, FrameLayout& out);
  // The item under (x, y) in the last layout's coordinates; `fold_count` gets the folded count.
  ItemRef hit(const FrameLayout& fl, float x, float y, uint32_t* fold_count = nullptr) const;
  // The vertical middle of the row showing `r` as laid out with `scroll_y` (pinned rows do not
  // scroll), or -1 when no row shows it; `pinned` says whether it is a pinned row.
  float row_y(ItemRef r, const RowState& c, float scroll_y, bool* pinned = nullptr) const;
  float lane_row_y(uint32_t lane, uint16_t depth, const RowState& c, float scroll_y, bool* pinned = nullptr) const;  // the same for a lane's row
  float pinned_height(const RowState& c) const;
  float lane_rows(uint32_t li, const RowState& c) const;  // rows it takes (a counter: its height in rows)
  // Stable names of a section and a lane, for RowState.
  std::string section_key(uint32_t si) const;
  std::string lane_key(uint32_t li) const;
  // Time extent of an item.
  Ns start_of(ItemRef r) const;
  Ns end_of(ItemRef r) const;
  std::string_view name_of(ItemRef r) const;
  Rgba colour_of(ItemRef r);
  Hue hue_of_event(EventId e) const;
  size_t view_bytes() const;  // what the view keeps besides the model (caches, lanes, counters)

  std::vector<Section> sections;
  std::vector<Lane> lanes;
  std::vector<CounterTrack> counters;
  TimelineStyle style;

 private:
  void rebuild_sections();
  float lane_height(uint32_t li, const RowState& c) const;
  // Lays out lane `li` at `y`; only rows within [clip_top, clip_bottom) (they never overlap).
  void layout_lane(uint32_t li, float y, float clip_top, float clip_bottom, const TimeView& v, const FontMetrics& f,
                   const Highlight& hl, const RowState& rs, FrameLayout& out);
  uint8_t name_step(StrId s);
  std::string_view label_text(EventId e, float room, const FontMetrics& f, FittedLabel& fit);
  // The strip under a communication item's exposed part (`exposed`: the analyses' intervals).
  void mark_exposed(const std::vector<std::pair<Ns, Ns>>& exposed, const LayoutItem& it, const TimeView& v, float x0,
                    float x1, float y1, FrameLayout& out) const;
  void layout_row(const SpanColumns& c, const TimeView& v, float y, const FontMetrics& f, const Highlight& hl,
                  LaneKind kind, uint32_t source, uint32_t lane, uint16_t depth, FrameLayout& out);

  const TraceModel* m_ = nullptr;
  const Annotation* a_ = nullptr;
  Tiers tiers_;
  std::vector<uint32_t> track_order_;      // tracks grouped for display
  std::vector<uint8_t> name_step_;         // per StrId: 0 unknown, else lightness step + 1
  std::vector<uint8_t> comm_name_;         // per StrId of a kernel: 2 a collective, 1 not, 0 not a kernel's
  std::vector<uint8_t> comm_track_;        // per track: a GPU stream that mostly runs collectives
  std::vector<uint32_t> short_;            // per StrId: (offset << 16 | len) of the short name, 0 = unknown
  std::vector<Hue> cat_hue_;               // per category index
  std::vector<std::pair<uint32_t, uint16_t>> track_lane_;  // per track: lane index, unused
};

}  // namespace strata::render
