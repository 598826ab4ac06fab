// Parsing a run of traceEvents entries into chunk-local columns. Chunks are parsed on
// separate threads; model_build.cpp merges them. Ids in a chunk (strings, categories,
// tracks) are local to it until the merge.
#pragma once

#include "core/base/status.h"
#include "core/progress.h"
#include "core/strings.h"
#include "core/trace_model.h"

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace strata {

// A (pid, tid) as written: numbers, or strings (numeric strings fold into numbers).
struct RawTrackKey {
  int64_t pid = 0, tid = 0;
  StrId pid_s = kNoStr, tid_s = kNoStr;  // chunk-local string ids for non-numeric pid / tid
  bool operator==(const RawTrackKey&) const = default;
};

struct RawTrackKeyHash {
  size_t operator()(const RawTrackKey& k) const {
    return size_t(uint64_t(k.pid) * 0x9E3779B97F4A7C15ull ^ uint64_t(k.tid) * 0xC2B2AE3D27D4EB4Full ^
                  (uint64_t(k.pid_s) << 32) ^ k.tid_s);
  }
};

struct RawTrackInfo {
  int64_t device = -1, stream = -1;  // from args on its events
};

struct FlowRec {
  Ns ts;
  int64_t id;
  uint64_t offset;
  uint32_t track;  // local
  uint8_t cat;     // local category
  EventPhase phase;
  bool bind_next;  // f without bp:"e": binds to the next slice, not the enclosing one
};

struct SeqRec { uint32_t event; int64_t seq; int64_t fwd_tid; };
struct PythonRec { uint32_t event; int64_t id; int64_t parent; };

enum class MetaKind : uint8_t { ProcessName, ProcessLabels, ProcessSortIndex, ThreadName, ThreadSortIndex };
struct MetaRec { MetaKind kind; uint32_t track; StrId text; int64_t number; };

struct CounterRec { Ns ts; uint32_t track; StrId name; StrId key; double value; };

struct WarningRec { uint64_t entry; uint64_t offset; std::string text; };

// A chunk's timed events (X, i, B, E) in file order, as columns.
struct ChunkEvents {
  std::vector<Ns> start, dur;
  std::vector<StrId> name;
  std::vector<uint8_t> cat;
  std::vector<EventPhase> phase;
  std::vector<int64_t> id;
  std::vector<uint64_t> offset;
  std::vector<uint32_t> track;
};

struct ChunkOut : ChunkEvents {
  std::vector<SeqRec> seqs;
  std::vector<PythonRec> pythons;
  std::vector<FlowRec> flows;
  std::vector<MetaRec> metas;
  std::vector<CounterRec> counters;
  MemoryEvents memory;  // track column is local here

  StringTable strings;
  std::vector<std::string> categories;  // local category table; Cat values first
  std::vector<Cat> category_kinds;      // their kinds (category_kinds())
  std::vector<RawTrackKey> track_keys;
  std::vector<RawTrackInfo> track_info;
  std::unordered_map<RawTrackKey, uint32_t, RawTrackKeyHash> track_index;

  uint64_t entries = 0;  // traceEvents entries seen, skipped ones included
  uint64_t per_phase[size_t(EventPhase::Other) + 1] = {};
  std::vector<uint64_t> per_category;  // entries per local category
  uint64_t warning_count = 0;
  std::vector<WarningRec> warnings;    // first few

  // Where parsing stopped: the start of the first entry at or past the limit, or the
  // array's closing bracket.
  uint64_t begin = 0, next = 0;
  bool array_closed = false;  // reached `]`
  bool truncated = false;     // reached the end of the buffer inside an entry
  Status status;              // Invalid: an unrecoverable syntax error (message with byte offset); Cancelled

  ChunkOut();
  void warn(uint64_t at, std::string text);
};

// Parses entries starting at `begin` (an entry's first byte) while an entry starts before
// `limit`; `n` is the buffer's size (the buffer is padded past it).
void parse_entries(const char* buf, size_t n, size_t begin, size_t limit, ChunkOut& out, Progress* progress);

inline constexpr size_t kMaxWarningsKept = 20;

}  // namespace strata
