// Merging parsed chunks into the trace model: global ids, tracks from metadata, the
// (track, depth, start) order with nesting computed, and overflow tracks for overlaps.
#include "core/model_build.h"

#include "core/big_alloc.h"
#include "core/links.h"
#include "core/parallel.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <numeric>
#include <utility>

namespace strata {

namespace {

struct GlobalKey {
  int64_t pid, tid;
  StrId pid_s, tid_s;
  bool operator<(const GlobalKey& o) const {
    return std::tie(pid, pid_s, tid, tid_s) < std::tie(o.pid, o.pid_s, o.tid, o.tid_s);
  }
};

// Reorders a column by `perm` (new index → old index).
template <class T>
void permute(std::vector<T>& col, const std::vector<uint32_t>& perm) {
  std::vector<T> out;
  reserve_huge(out, perm.size());
  out.resize(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) out[i] = col[perm[i]];
  col = std::move(out);
}

// Below this many events a second thread costs more than it saves.
constexpr size_t kParallelMin = 1 << 16;

// The number after `prefix` (any case) and spaces: "stream 7", "Stream 3"; else -1.
int64_t number_after(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return -1;
  for (size_t i = 0; i < prefix.size(); ++i) {
    char c = s[i];
    if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
    if (c != prefix[i]) return -1;
  }
  s.remove_prefix(prefix.size());
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  int64_t v = -1;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  return r.ec == std::errc() ? v : -1;
}

// The device a process row is, by its labels ("GPU 0", "MTIA 9") or else its name.
int64_t device_of(const StringTable& strings, const Process& p) {
  int64_t d = device_number_of_label(strings.view(p.labels));
  return d >= 0 || p.labels != kNoStr ? d : device_number_of_label(strings.view(p.name));
}

// A process row that is an accelerator by its labels ("NPU", "GPU 0"): its threads are the
// device's streams, or views derived from them.
bool is_device_process(const StringTable& strings, const Process& p) {
  return !device_word_of_label(strings.view(p.labels)).empty();
}

// A device process's thread that is a stream: named "Stream N" (or its tid so written), or not
// named at all. Other names ("Computing", "Free" of torch_npu's Overlap Analysis) are views.
bool is_stream_thread(const StringTable& strings, const Track& t) {
  if (t.name == kNoStr && t.tid_label == kNoStr) return true;
  return number_after(strings.view(t.name), "stream") >= 0 || number_after(strings.view(t.tid_label), "stream") >= 0;
}

// Sorts v (no two elements equal under `less`). Each thread's events come nearly in start
// order, a few sorted runs that overlap little: each run is merged into the sorted prefix
// over only the span where they overlap. Past a work budget, an ordinary sort.
template <class T, class Less>
void sort_runs(std::vector<T>& v, Less less) {
  size_t n = v.size(), budget = 4 * n + 4096;
  for (size_t b = 1;;) {
    while (b < n && !less(v[b], v[b - 1])) ++b;
    if (b >= n) return;
    size_t c = b + 1;
    while (c < n && !less(v[c], v[c - 1])) ++c;
    // v[0, b) and v[b, c) are sorted; only v[p, b) and v[b, q) are out of place.
    auto mid = v.begin() + ptrdiff_t(b);
    auto p = std::upper_bound(v.begin(), mid, v[b], less);
    auto q = std::lower_bound(mid, v.begin() + ptrdiff_t(c), v[b - 1], less);
    auto work = size_t(q - p);
    if (work > budget) {
      std::sort(v.begin(), v.end(), less);
      return;
    }
    budget -= work;
    std::inplace_merge(p, mid, q, less);
    b = c;
  }
}

// An event as nesting sees it: compact, so sorting needs no indirection per compare.
struct Key {
  Ns start, dur;
  uint32_t e;
};

// One track's events sorted by (start, longer first, file order) and nested: `kept` with
// their depth written to `depth`, events per depth, and the events that overlapped
// without nesting (they go to an overflow track).
struct Nested {
  std::vector<uint32_t> kept, per_depth;
  std::vector<Key> overflow;
  std::vector<std::pair<uint32_t, Ns>> clipped;  // events nested by cutting their end: (event, duration)
};

// `overhang`: how far an event may end after the one that encloses it and still nest in it
// (its end is cut there): the rounding of a trace written in whole microseconds.
Nested nest_track(std::vector<Key> list, std::vector<uint16_t>& depth, Ns overhang = 0) {
  auto by_start = [](const Key& a, const Key& b) {
    if (a.start != b.start) return a.start < b.start;
    if (a.dur != b.dur) return a.dur > b.dur;
    return a.e < b.e;
  };
  sort_runs(list, by_start);
  constexpr size_t kMaxDepth = UINT16_MAX;
  Nested r;
  reserve_huge(r.kept, list.size());
  std::vector<Ns> stack;  // end times of the enclosing events
  for (const Key& k : list) {
    Ns end = k.start + k.dur;
    while (!stack.empty() && stack.back() <= k.start) stack.pop_back();
    if (!stack.empty() && end > stack.back() && end - stack.back() <= overhang && stack.size() < kMaxDepth) {
      end = stack.back();
      r.clipped.push_back({k.e, end - k.start});
    }
    if (!stack.empty() && (end > stack.back() || stack.size() >= kMaxDepth)) {
      r.overflow.push_back(k);
      continue;
    }
    depth[k.e] = uint16_t(stack.size());
    if (r.per_depth.size() <= stack.size()) r.per_depth.push_back(0);
    r.per_depth[stack.size()]++;
    stack.push_back(end);
    r.kept.push_back(k.e);
  }
  return r;
}

// Event columns stay in their chunks (ids made global in place) until the final order is
// known, then are gathered straight into place: merging them first would write every
// byte twice.
struct PlacedChunk : ChunkEvents {
  uint32_t base = 0;  // index of the chunk's first event
};

class ModelBuilder {
 public:
  ModelBuilder(TraceModel& m, Progress* progress, bool legacy) : m_(m), progress_(progress), legacy_(legacy) {}
  void run(std::vector<ChunkOut>& chunks);

 private:
  void merge(std::vector<ChunkOut>& chunks);
  void apply_metadata();
  void recognise_uncategorised();
  void count_track_events();
  void fold_runtime_processes();
  void classify();
  void pair_begin_end();
  void order_and_nest();
  template <class T>
  void gather(std::vector<T> ChunkEvents::*column, std::vector<T>& out, const std::vector<uint32_t>& perm);
  void warn(std::string text) {
    ++m_.warning_count;
    if (m_.warnings.size() < 50) m_.warnings.push_back(std::move(text));
  }

  TraceModel& m_;
  Progress* progress_;
  size_t events_ = 0;            // in all chunks
  std::vector<bool> drop_;       // events merged away (B/E pairs)
  std::map<std::pair<int64_t, StrId>, uint32_t> process_index_;
  std::map<GlobalKey, uint32_t> track_index_;
  const bool legacy_;  // the legacy autograd profiler's export: no categories, whole microseconds
  std::vector<GlobalKey> track_keys_;
  std::vector<RawTrackInfo> track_info_;
  std::vector<MetaRec> metas_;
  std::vector<SeqRec> seqs_;
  std::vector<PythonRec> pythons_;
  std::vector<FlowRec> flows_;
  std::vector<CounterRec> counters_;
  std::vector<PlacedChunk> chunks_;
  struct TrackCounts {
    uint32_t all = 0, gpu = 0, host = 0, untyped = 0, launches = 0;  // host: neither GPU work nor Trace
  };
  std::vector<TrackCounts> counts_;  // per track, by kind
};

void ModelBuilder::merge(std::vector<ChunkOut>& chunks) {
  for (int c = 0; c < int(Cat::Count); ++c) m_.category_names.emplace_back(cat_name(Cat(c)));
  m_.stats.per_category.assign(m_.category_names.size(), 0);

  // First, serially: chunk-local ids of strings, categories and tracks → global ones.
  struct ChunkIds {
    std::vector<StrId> str;
    std::vector<uint8_t> cat;
    std::vector<uint32_t> trk;
    uint32_t base = 0;
  };
  std::vector<ChunkIds> ids(chunks.size());
  size_t total = 0, flows = 0, seqs = 0, pythons = 0;
  uint64_t entry_base = 0;
  for (size_t k = 0; k < chunks.size(); ++k) {
    ChunkOut& ch = chunks[k];
    ChunkIds& id = ids[k];
    id.base = uint32_t(total);
    total += ch.start.size();
    flows += ch.flows.size(), seqs += ch.seqs.size(), pythons += ch.pythons.size();
    id.str.resize(ch.strings.size());
    for (StrId s = 0; s < id.str.size(); ++s) id.str[s] = m_.strings.intern(ch.strings.view(s));
    id.cat.resize(ch.categories.size());
    for (size_t c = 0; c < id.cat.size(); ++c) {
      auto it = std::find(m_.category_names.begin(), m_.category_names.end(), ch.categories[c]);
      if (it == m_.category_names.end()) {
        if (m_.category_names.size() >= 255) {
          id.cat[c] = uint8_t(Cat::Other);
          continue;
        }
        m_.category_names.push_back(ch.categories[c]);
        m_.stats.per_category.push_back(0);
        it = m_.category_names.end() - 1;
      }
      id.cat[c] = uint8_t(it - m_.category_names.begin());
      m_.stats.per_category[id.cat[c]] += ch.per_category[c];
    }
    auto S = [&](StrId s) { return s == kNoStr ? kNoStr : id.str[s]; };
    id.trk.resize(ch.track_keys.size());
    for (size_t t = 0; t < id.trk.size(); ++t) {
      const RawTrackKey& key = ch.track_keys[t];
      GlobalKey g{key.pid, key.tid, S(key.pid_s), S(key.tid_s)};
      auto [it, added] = track_index_.try_emplace(g, uint32_t(track_keys_.size()));
      if (added) {
        track_keys_.push_back(g);
        track_info_.push_back(ch.track_info[t]);
      } else {
        auto& info = track_info_[it->second];
        if (info.device < 0) info.device = ch.track_info[t].device;
        if (info.stream < 0) info.stream = ch.track_info[t].stream;
      }
      id.trk[t] = it->second;
    }
    for (auto mr : ch.metas) metas_.push_back({mr.kind, id.trk[mr.track], S(mr.text), mr.number});
    for (auto c : ch.counters) counters_.push_back({c.ts, id.trk[c.track], S(c.name), S(c.key), c.value});
    m_.stats.trace_events += ch.entries;
    for (size_t p = 0; p < std::size(ch.per_phase); ++p) m_.stats.per_phase[p] += ch.per_phase[p];
    m_.warning_count += ch.warning_count;
    for (auto& w : ch.warnings)
      if (m_.warnings.size() < 50)
        m_.warnings.push_back("event #" + std::to_string(entry_base + w.entry) + " at byte " +
                              std::to_string(w.offset) + ": " + w.text);
    entry_base += ch.entries;
  }

  m_.ev.kinds = category_kinds(m_.category_names);

  // Then the ids in the columns and the per-event records, split over two threads, each
  // taking the chunks in order.
  events_ = total;
  reserve_huge(flows_, flows);
  reserve_huge(seqs_, seqs);
  reserve_huge(pythons_, pythons);
  in_two_threads(
      total >= kParallelMin,
      [&] {
        for (size_t k = 0; k < chunks.size(); ++k) {
          ChunkOut& ch = chunks[k];
          const ChunkIds& id = ids[k];
          for (auto& c : ch.cat) c = id.cat[c];
          for (auto& n : ch.name) n = id.str[n];
          for (auto s : ch.seqs) seqs_.push_back({s.event + id.base, s.seq, s.fwd_tid});
          for (auto p : ch.pythons) pythons_.push_back({p.event + id.base, p.id, p.parent});
        }
      },
      [&] {
        for (size_t k = 0; k < chunks.size(); ++k) {
          ChunkOut& ch = chunks[k];
          const ChunkIds& id = ids[k];
          for (auto& t : ch.track) t = id.trk[t];
          for (auto f : ch.flows) {
            f.track = id.trk[f.track];
            f.cat = id.cat[f.cat];
            flows_.push_back(f);
          }
          std::vector<FlowRec>().swap(ch.flows);
          auto& mem = m_.memory;
          for (size_t i = 0; i < ch.memory.size(); ++i) {
            mem.ts.push_back(ch.memory.ts[i]);
            mem.bytes.push_back(ch.memory.bytes[i]);
            mem.total_allocated.push_back(ch.memory.total_allocated[i]);
            mem.total_reserved.push_back(ch.memory.total_reserved[i]);
            mem.addr.push_back(ch.memory.addr[i]);
            mem.device_type.push_back(ch.memory.device_type[i]);
            mem.device_id.push_back(ch.memory.device_id[i]);
            mem.track.push_back(id.trk[ch.memory.track[i]]);
          }
        }
      });
  for (size_t k = 0; k < chunks.size(); ++k) {
    ChunkOut& ch = chunks[k];
    PlacedChunk& placed = chunks_.emplace_back();
    static_cast<ChunkEvents&>(placed) = std::move(static_cast<ChunkEvents&>(ch));
    placed.base = ids[k].base;
    ch = ChunkOut();
  }

  // Processes and tracks, in order of first appearance.
  for (uint32_t t = 0; t < track_keys_.size(); ++t) {
    const GlobalKey& k = track_keys_[t];
    auto [pit, padded] = process_index_.try_emplace({k.pid, k.pid_s}, uint32_t(m_.processes.size()));
    if (padded) {
      Process p;
      p.pid = k.pid;
      p.pid_label = k.pid_s;
      p.sort_index = k.pid;
      m_.processes.push_back(p);
    }
    Track tr;
    tr.process = pit->second;
    tr.tid = k.tid;
    tr.tid_label = k.tid_s;
    tr.sort_index = k.tid;
    m_.tracks.push_back(tr);
  }
}

void ModelBuilder::apply_metadata() {
  for (const MetaRec& mr : metas_) {
    Track& t = m_.tracks[mr.track];
    Process& p = m_.processes[t.process];
    switch (mr.kind) {
      case MetaKind::ProcessName: if (mr.text != kNoStr) p.name = mr.text; break;
      case MetaKind::ProcessLabels: if (mr.text != kNoStr) p.labels = mr.text; break;
      case MetaKind::ProcessSortIndex: p.sort_index = mr.number; break;
      // The first thread_name wins: PyTorch later renames threads it merely touched.
      case MetaKind::ThreadName: if (mr.text != kNoStr && t.name == kNoStr) t.name = mr.text; break;
      case MetaKind::ThreadSortIndex: t.sort_index = mr.number; break;
    }
  }
  std::map<std::pair<uint32_t, StrId>, size_t> series;  // (process, name) → counters index
  for (const CounterRec& c : counters_) {
    uint32_t proc = m_.tracks[c.track].process;
    std::string name = std::string(m_.strings.view(c.name));
    std::string_view key = m_.strings.view(c.key);
    if (key != "value" && key != name) name.append(".").append(key);
    auto [it, added] = series.try_emplace({proc, m_.strings.intern(name)}, m_.counters.size());
    if (added) m_.counters.push_back({proc, it->first.second, {}, {}});
    m_.counters[it->second].ts.push_back(c.ts);
    m_.counters[it->second].value.push_back(c.value);
  }
  for (auto& s : m_.counters) {
    std::vector<uint32_t> order(s.ts.size());
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return s.ts[a] < s.ts[b]; });
    permute(s.ts, order);
    permute(s.value, order);
  }
}

void ModelBuilder::recognise_uncategorised() {
  // Events written without a category whose place says what they are (torch_npu writes its
  // device tasks and its runtime API calls so): on a device's stream they are its kernels,
  // copies and sets; `<API>@<call>` on a host thread a runtime call. They take that category
  // and are counted under it. On a device's other threads (derived views) they stay as they are.
  // In the legacy autograd profiler's export, which writes no categories, an event on a host
  // thread whose name is not an operator's is a record_function range: a user annotation.
  auto& per_category = m_.stats.per_category;
  if (per_category.size() <= size_t(Cat::None) || per_category[size_t(Cat::None)] == 0) return;
  const bool legacy = legacy_;
  enum Role : uint8_t { Host, Stream, View };
  std::vector<uint8_t> role(m_.tracks.size(), Host);
  for (uint32_t t = 0; t < m_.tracks.size(); ++t)
    if (is_device_process(m_.strings, m_.processes[m_.tracks[t].process]))
      role[t] = is_stream_thread(m_.strings, m_.tracks[t]) ? Stream : View;
  uint8_t runtime = UINT8_MAX;
  auto runtime_category = [&] {
    if (runtime != UINT8_MAX) return runtime;
    auto it = std::find(m_.category_names.begin(), m_.category_names.end(), kPrivateUse1Runtime);
    if (it == m_.category_names.end() && m_.category_names.size() < 255) {
      m_.category_names.emplace_back(kPrivateUse1Runtime);
      per_category.push_back(0);
      m_.ev.kinds = category_kinds(m_.category_names);
      it = m_.category_names.end() - 1;
    }
    runtime = it != m_.category_names.end() ? uint8_t(it - m_.category_names.begin()) : uint8_t(Cat::CudaRuntime);
    return runtime;
  };
  // A custom autograd Function's call is recorded under its class's name, and its backward node
  // under that name and "Backward" (tabnet's SparsemaxFunction, SparsemaxFunctionBackward): an
  // op, as the newer export's cpu_op category says, not a range of the program's.
  std::vector<int8_t> function_calls(m_.strings.size(), -1);
  auto function_call = [&](StrId name) {
    int8_t& known = function_calls[name];
    if (known < 0) known = m_.strings.find(std::string(m_.strings.view(name)) + "Backward") != kNoStr;
    return known == 1;
  };
  for (PlacedChunk& ch : chunks_)
    for (size_t i = 0; i < ch.cat.size(); ++i) {
      if (ch.cat[i] != uint8_t(Cat::None) || ch.phase[i] != EventPhase::Complete) continue;
      uint8_t cat;
      if (role[ch.track[i]] == Stream) cat = uint8_t(device_task_kind(m_.strings.view(ch.name[i])));
      else if (role[ch.track[i]] == Host && is_runtime_api_call_name(m_.strings.view(ch.name[i]))) cat = runtime_category();
      else if (role[ch.track[i]] == Host && legacy && !is_legacy_op_name(m_.strings.view(ch.name[i])) && !function_call(ch.name[i]))
        cat = uint8_t(Cat::UserAnnotation);
      else continue;
      ch.cat[i] = cat;
      per_category[size_t(Cat::None)]--;
      per_category[cat]++;
    }
}

void ModelBuilder::count_track_events() {
  counts_.assign(m_.tracks.size(), {});
  for (const PlacedChunk& ch : chunks_)
    for (size_t i = 0; i < ch.track.size(); ++i) {
      Cat c = m_.ev.kinds[ch.cat[i]];
      TrackCounts& n = counts_[ch.track[i]];
      n.all++;
      if (is_gpu_cat(c)) n.gpu++;
      else if (c != Cat::Trace) n.host++;
      n.untyped += c == Cat::None;
      n.launches += is_launch_cat(c);
    }
}

void ModelBuilder::fold_runtime_processes() {
  // A host process whose events are all runtime calls, on thread ids that another host process
  // has, is that process's runtime layer written apart (torch_npu's "CANN"): a thread id names
  // an OS thread, so its threads are the other process's, and its calls nest in the ops (or the
  // task queue's spans) that made them. Its threads merge into that process's.
  size_t np = m_.processes.size(), nt = m_.tracks.size();
  std::vector<uint64_t> p_events(np), p_launches(np);
  for (uint32_t t = 0; t < nt; ++t) {
    p_events[m_.tracks[t].process] += counts_[t].all;
    p_launches[m_.tracks[t].process] += counts_[t].launches;
  }
  auto host = [&](uint32_t p) {
    return !is_device_process(m_.strings, m_.processes[p]) && device_of(m_.strings, m_.processes[p]) < 0;
  };
  std::vector<uint32_t> folded;
  for (uint32_t p = 0; p < np; ++p)
    if (p_events[p] > 0 && p_launches[p] == p_events[p] && host(p)) folded.push_back(p);
  if (folded.empty()) return;
  std::map<std::pair<int64_t, StrId>, std::vector<uint32_t>> by_tid;  // (tid, tid label) → tracks
  for (uint32_t t = 0; t < nt; ++t)
    if (m_.tracks[t].overflow_of == kNoTrack) by_tid[{m_.tracks[t].tid, m_.tracks[t].tid_label}].push_back(t);
  std::vector<uint32_t> remap(nt);
  std::iota(remap.begin(), remap.end(), 0u);
  bool any = false;
  for (uint32_t p : folded) {
    std::map<uint32_t, uint32_t> shared;  // other host process → threads in common
    for (uint32_t t = 0; t < nt; ++t) {
      if (m_.tracks[t].process != p || counts_[t].all == 0) continue;
      for (uint32_t u : by_tid[{m_.tracks[t].tid, m_.tracks[t].tid_label}]) {
        uint32_t q = m_.tracks[u].process;
        if (q != p && host(q) && std::find(folded.begin(), folded.end(), q) == folded.end()) shared[q]++;
      }
    }
    if (shared.empty()) continue;
    uint32_t into = std::max_element(shared.begin(), shared.end(), [](auto& a, auto& b) { return a.second < b.second; })->first;
    for (uint32_t t = 0; t < nt; ++t) {
      if (m_.tracks[t].process != p) continue;
      uint32_t same = kNoTrack;
      for (uint32_t u : by_tid[{m_.tracks[t].tid, m_.tracks[t].tid_label}])
        if (m_.tracks[u].process == into) same = u;
      if (same != kNoTrack) {
        remap[t] = same;
        TrackCounts& to = counts_[same];
        const TrackCounts from = std::exchange(counts_[t], TrackCounts{});
        to.all += from.all, to.gpu += from.gpu, to.host += from.host, to.untyped += from.untyped, to.launches += from.launches;
      } else {
        m_.tracks[t].process = into;  // a thread only the runtime layer wrote: the process's all the same
      }
      any = true;
    }
  }
  if (!any) return;
  for (PlacedChunk& ch : chunks_)
    for (uint32_t& t : ch.track) t = remap[t];
  for (FlowRec& f : flows_) f.track = remap[f.track];
  for (uint32_t& t : m_.memory.track) t = remap[t];
}

void ModelBuilder::classify() {
  // A track is a GPU stream when its events are GPU work; its process row is then a GPU.
  std::vector<bool> to_number(m_.processes.size());  // device processes whose label has no number
  for (uint32_t t = 0; t < m_.tracks.size(); ++t) {
    Track& tr = m_.tracks[t];
    Process& p = m_.processes[tr.process];
    std::string_view tid_label = m_.strings.view(tr.tid_label);
    bool device_process = is_device_process(m_.strings, p);
    const TrackCounts& n = counts_[t];
    if (n.gpu > 0 && n.gpu >= n.host) {
      tr.kind = TrackKind::GpuStream;
      tr.stream = track_info_[t].stream >= 0 ? track_info_[t].stream : number_after(tid_label, "stream");
      if (tr.stream < 0) tr.stream = number_after(m_.strings.view(tr.name), "stream");
      if (tr.stream < 0) tr.stream = tr.tid;
      int64_t dev = device_of(m_.strings, p);
      if (dev < 0) dev = track_info_[t].device;
      if (dev < 0 && device_process) to_number[tr.process] = true;  // "NPU": numbered below
      else if (dev < 0) dev = p.pid;
      if (dev >= 0) p.device = int32_t(dev);
    } else if (n.host > 0 && !(device_process && n.untyped == n.host)) {
      // (A device's thread of uncategorised events that are no stream's is a view, not a host.)
      tr.kind = TrackKind::CpuThread;
    }
    if (tr.name == kNoStr) {
      std::string name = tr.kind == TrackKind::GpuStream ? "stream " + std::to_string(tr.stream)
                         : tr.tid_label != kNoStr        ? std::string(tid_label)
                                                         : "thread " + std::to_string(shown_thread_id(tr.tid));
      tr.name = m_.strings.intern(name);
    }
  }
  for (Process& p : m_.processes)
    if (p.device < 0) p.device = int32_t(device_of(m_.strings, p));
  // A device whose label has no number ("NPU") is device 0, or the next number no other
  // process's label or streams took.
  std::vector<int64_t> taken;
  for (const Process& p : m_.processes) {
    if (p.device >= 0) taken.push_back(p.device);
    if (int64_t d = device_of(m_.strings, p); d >= 0) taken.push_back(d);
  }
  for (uint32_t pi = 0; pi < m_.processes.size(); ++pi) {
    if (!to_number[pi] || m_.processes[pi].device >= 0) continue;
    int32_t d = 0;
    while (std::find(taken.begin(), taken.end(), d) != taken.end()) ++d;
    m_.processes[pi].device = d;
    taken.push_back(d);
  }
}

void ModelBuilder::pair_begin_end() {
  // B/E pairs become complete events; an unmatched B or E is dropped with a warning.
  if (m_.stats.per_phase[size_t(EventPhase::Begin)] == 0 && m_.stats.per_phase[size_t(EventPhase::End)] == 0) return;
  drop_.assign(events_, false);
  struct BeginEnd {
    PlacedChunk* ch;
    uint32_t i;  // in the chunk
  };
  std::vector<BeginEnd> be;
  for (PlacedChunk& ch : chunks_)
    for (uint32_t i = 0; i < ch.phase.size(); ++i)
      if (ch.phase[i] == EventPhase::Begin || ch.phase[i] == EventPhase::End) be.push_back({&ch, i});
  auto track = [](const BeginEnd& x) { return x.ch->track[x.i]; };
  auto start = [](const BeginEnd& x) { return x.ch->start[x.i]; };
  auto phase = [](const BeginEnd& x) -> EventPhase& { return x.ch->phase[x.i]; };
  auto drop = [&](const BeginEnd& x) { drop_[x.ch->base + x.i] = true; };
  std::stable_sort(be.begin(), be.end(), [&](const BeginEnd& a, const BeginEnd& b) {
    return std::pair(track(a), start(a)) < std::pair(track(b), start(b));
  });
  std::vector<BeginEnd> open;
  uint64_t unmatched = 0;
  for (size_t i = 0; i < be.size(); ++i) {
    const BeginEnd& x = be[i];
    if (i > 0 && track(be[i - 1]) != track(x)) {
      unmatched += open.size();
      for (const BeginEnd& o : open) drop(o);
      open.clear();
    }
    if (phase(x) == EventPhase::Begin) {
      open.push_back(x);
    } else {
      drop(x);
      if (open.empty()) {
        ++unmatched;
        continue;
      }
      BeginEnd b = open.back();
      open.pop_back();
      b.ch->dur[b.i] = start(x) - start(b);
      phase(b) = EventPhase::Complete;
    }
  }
  unmatched += open.size();
  for (const BeginEnd& o : open) drop(o);
  if (unmatched) warn(std::to_string(unmatched) + " begin/end (B/E) events without a partner were dropped");
}

// out[i] = the chunk column's value for event perm[i]. Neighbours in the final order
// are mostly neighbours in the file, so the chunk of the last lookup is tried first.
template <class T>
void ModelBuilder::gather(std::vector<T> ChunkEvents::*column, std::vector<T>& out, const std::vector<uint32_t>& perm) {
  std::vector<T>().swap(out);
  reserve_huge(out, perm.size());
  out.resize(perm.size());
  size_t c = 0;
  for (size_t i = 0; i < perm.size(); ++i) {
    uint32_t g = perm[i];
    if (g < chunks_[c].base || g - chunks_[c].base >= (chunks_[c].*column).size()) {
      auto it = std::upper_bound(chunks_.begin(), chunks_.end(), g,
                                 [](uint32_t x, const PlacedChunk& d) { return x < d.base; });
      c = size_t(it - chunks_.begin()) - 1;
    }
    out[i] = (chunks_[c].*column)[g - chunks_[c].base];
  }
}

void ModelBuilder::order_and_nest() {
  auto& ev = m_.ev;
  size_t n = events_;
  // The legacy autograd profiler writes whole microseconds: a child can end 1 µs after its parent.
  const Ns overhang = legacy_ ? 1'000 : 0;
  // Events per track, in file order.
  std::vector<std::vector<Key>> lists(m_.tracks.size());
  {
    std::vector<uint32_t> counts(m_.tracks.size());
    for (const PlacedChunk& ch : chunks_)
      for (uint32_t i = 0; i < ch.track.size(); ++i)
        if (drop_.empty() || !drop_[ch.base + i]) counts[ch.track[i]]++;
    for (size_t t = 0; t < lists.size(); ++t) reserve_huge(lists[t], counts[t]);
    for (PlacedChunk& ch : chunks_) {
      for (uint32_t i = 0; i < ch.track.size(); ++i)
        if (drop_.empty() || !drop_[ch.base + i]) lists[ch.track[i]].push_back({ch.start[i], ch.dur[i], ch.base + i});
      std::vector<uint32_t>().swap(ch.track);
    }
  }
  // A cancel leaves the model half built: the loader drops it.
  auto cancelled = [&] { return progress_ && progress_->cancelled(); };
  if (cancelled()) return;
  std::vector<uint16_t> depth;
  assign_huge(depth, n, uint16_t(0));
  // Sorting and nesting are independent per track: the original tracks go to two threads,
  // largest first; overflow tracks (few events) are done after, as they appear.
  std::vector<Nested> nested(lists.size());
  {
    std::vector<uint32_t> order(lists.size());
    std::iota(order.begin(), order.end(), 0u);
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return lists[a].size() > lists[b].size(); });
    parallel_for(n >= kParallelMin ? 2 : 1, order.size(),
                 [&](size_t k) { nested[order[k]] = nest_track(std::move(lists[order[k]]), depth, overhang); });
  }
  if (cancelled()) return;
  std::vector<uint32_t> perm;
  reserve_huge(perm, n);
  std::vector<std::pair<uint32_t, Ns>> clipped;
  for (uint32_t t = 0; t < nested.size(); ++t) {  // `nested` grows as overflow tracks appear
    Nested r = std::move(nested[t]);
    clipped.insert(clipped.end(), r.clipped.begin(), r.clipped.end());
    // Level by level, each level in start order.
    Track& tr = m_.tracks[t];
    tr.events.begin = uint32_t(perm.size());
    std::vector<uint32_t> offset(r.per_depth.size() + 1, 0);
    for (size_t d = 0; d < r.per_depth.size(); ++d) offset[d + 1] = offset[d] + r.per_depth[d];
    tr.levels.resize(r.per_depth.size());
    for (size_t d = 0; d < r.per_depth.size(); ++d)
      tr.levels[d] = {tr.events.begin + offset[d], tr.events.begin + offset[d + 1]};
    perm.resize(perm.size() + r.kept.size());
    for (uint32_t e : r.kept) perm[tr.events.begin + offset[depth[e]]++] = e;
    tr.events.end = uint32_t(perm.size());
    if (!r.overflow.empty()) {
      m_.stats.overlaps += r.overflow.size();
      Track o;
      o.kind = tr.kind;
      o.process = tr.process;
      o.tid = tr.tid;
      o.tid_label = tr.tid_label;
      o.stream = tr.stream;
      o.sort_index = tr.sort_index;
      std::string name(m_.strings.view(tr.name));
      name.append(" (overlapping)");
      o.name = m_.strings.intern(name);
      o.overflow_of = t;
      m_.tracks[t].overflow = uint32_t(m_.tracks.size());
      m_.tracks.push_back(std::move(o));
      nested.push_back(nest_track(std::move(r.overflow), depth, overhang));
    }
  }
  if (m_.stats.overlaps)
    warn(std::to_string(m_.stats.overlaps) +
         " events overlapped others on their thread without nesting; they are kept on '(overlapping)' rows");

  // Apply the order; keep old → new for the passes that hold old indices.
  std::vector<uint32_t> new_index;
  assign_huge(new_index, n, kNoEvent);
  for (uint32_t i = 0; i < perm.size(); ++i) new_index[perm[i]] = i;
  // Columns are independent: split them over two threads (about equal bytes each).
  in_two_threads(perm.size() >= kParallelMin,
                 [&] {
                   gather(&ChunkEvents::start, ev.start, perm);
                   if (cancelled()) return;
                   gather(&ChunkEvents::id, ev.id, perm);
                   if (cancelled()) return;
                   gather(&ChunkEvents::name, ev.name, perm);
                 },
                 [&] {
                   gather(&ChunkEvents::dur, ev.dur, perm);
                   if (cancelled()) return;
                   gather(&ChunkEvents::offset, ev.source_offset, perm);
                   if (cancelled()) return;
                   gather(&ChunkEvents::cat, ev.cat, perm);
                   gather(&ChunkEvents::phase, ev.phase, perm);
                   permute(depth, perm);
                 });
  if (cancelled()) return;
  for (auto [e, dur] : clipped) ev.dur[new_index[e]] = dur;
  m_.stats.rounding_clips = clipped.size();
  std::vector<PlacedChunk>().swap(chunks_);
  ev.depth = std::move(depth);
  assign_huge(ev.link, ev.size(), kNoEvent);
  auto remap = [&](auto& recs) {
    size_t k = 0;
    for (auto& r : recs)
      if (new_index[r.event] != kNoEvent) {
        r.event = new_index[r.event];
        recs[k++] = r;
      }
    recs.resize(k);
  };
  remap(seqs_);
  remap(pythons_);
}

void ModelBuilder::run(std::vector<ChunkOut>& chunks) {
  // Each step takes a fraction of a second on a large trace: a cancel is looked at between them.
  auto cancelled = [&] { return progress_ && progress_->cancelled(); };
  merge(chunks);
  if (cancelled()) return;
  apply_metadata();
  recognise_uncategorised();
  count_track_events();
  fold_runtime_processes();
  classify();
  pair_begin_end();
  if (cancelled()) return;
  order_and_nest();
  if (cancelled()) return;
  LinkInputs in{std::move(seqs_), std::move(pythons_), std::move(flows_)};
  resolve_links(m_, in, progress_);
  complete_memory_events(m_.memory);
  auto& ev = m_.ev;
  if (ev.size()) {
    m_.time_begin = INT64_MAX;
    m_.time_end = INT64_MIN;
    for (size_t e = 0; e < ev.size(); ++e) {
      m_.time_begin = std::min(m_.time_begin, ev.start[e]);
      m_.time_end = std::max(m_.time_end, ev.start[e] + ev.dur[e]);
    }
  }
}

}  // namespace

void complete_memory_events(MemoryEvents& m) {
  std::vector<uint32_t> order(m.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return m.ts[a] < m.ts[b]; });
  if (!std::is_sorted(m.ts.begin(), m.ts.end())) {
    permute(m.ts, order);
    permute(m.bytes, order);
    permute(m.total_allocated, order);
    permute(m.total_reserved, order);
    permute(m.addr, order);
    permute(m.device_type, order);
    permute(m.device_id, order);
    permute(m.track, order);
  }
  // Per device: the running sum of Bytes since the last recorded total. A device with no
  // recorded total starts at the least that keeps its sum from going below zero.
  struct Running { int64_t total = 0, lowest = 0; bool recorded = false; };
  std::map<std::pair<int, int>, Running> devices;
  for (size_t i = 0; i < m.size(); ++i) {
    Running& r = devices[{m.device_type[i], m.device_id[i]}];
    if (m.total_allocated[i] >= 0) {
      r.total = m.total_allocated[i];
      r.recorded = true;
    } else {
      r.total += m.bytes[i];
      if (!r.recorded) r.lowest = std::min(r.lowest, r.total);
      m.totals_derived = true;
    }
    m.reserved_recorded |= m.total_reserved[i] >= 0;
    m.addresses_recorded |= m.addr[i] != 0;
  }
  if (!m.totals_derived) return;
  for (auto& [key, r] : devices) r.total = r.recorded ? 0 : -r.lowest;  // where each unrecorded sum starts
  for (size_t i = 0; i < m.size(); ++i) {
    Running& r = devices[{m.device_type[i], m.device_id[i]}];
    if (m.total_allocated[i] >= 0) r.total = m.total_allocated[i];
    else m.total_allocated[i] = r.total += m.bytes[i];
  }
  for (int64_t& v : m.total_reserved) v = std::max<int64_t>(v, 0);
}

void build_model(std::vector<ChunkOut>& chunks, TraceModel& model, Progress* progress, bool legacy_autograd) {
  ModelBuilder(model, progress, legacy_autograd).run(chunks);
}

}  // namespace strata
