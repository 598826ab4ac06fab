#include "core/kineto_parse.h"

#include "core/big_alloc.h"
#include "core/json_scan.h"

#include <simdjson.h>

#include <algorithm>
#include <cstring>

namespace strata {

namespace od = simdjson::ondemand;

ChunkOut::ChunkOut() {
  for (int c = 0; c < int(Cat::Count); ++c) categories.emplace_back(cat_name(Cat(c)));
  category_kinds = strata::category_kinds(categories);
  per_category.assign(categories.size(), 0);
}

void ChunkOut::warn(uint64_t at, std::string text) {
  ++warning_count;
  if (warnings.size() < kMaxWarningsKept) warnings.push_back({entries, at, std::move(text)});
}

namespace {

Cat known_category(std::string_view s) {
  switch (s.size()) {
    case 5:
      if (s == "Trace") return Cat::Trace;
      break;
    case 6:
      if (s == "cpu_op") return Cat::CpuOp;
      if (s == "kernel" || s == "Kernel") return Cat::Kernel;
      if (s == "Memcpy") return Cat::GpuMemcpy;
      if (s == "Memset") return Cat::GpuMemset;
      break;
    case 7:
      if (s == "Runtime") return Cat::CudaRuntime;
      break;
    case 8:
      if (s == "Operator") return Cat::CpuOp;
      if (s == "overhead" || s == "Overhead") return Cat::Overhead;
      break;
    case 9:
      if (s == "cuda_sync") return Cat::CudaSync;
      break;
    case 10:
      if (s == "gpu_memcpy") return Cat::GpuMemcpy;
      if (s == "gpu_memset") return Cat::GpuMemset;
      if (s == "cuda_event") return Cat::CudaEvent;
      break;
    case 11:
      if (s == "cuda_driver") return Cat::CudaDriver;
      break;
    case 12:
      if (s == "cuda_runtime") return Cat::CudaRuntime;
      break;
    case 15:
      if (s == "user_annotation") return Cat::UserAnnotation;
      if (s == "python_function") return Cat::PythonFunction;
      break;
    case 17:
      if (s == "cpu_instant_event") return Cat::CpuInstant;
      break;
    case 19:
      if (s == "gpu_user_annotation") return Cat::GpuUserAnnotation;
      if (s == "cuda_profiler_range") return Cat::ProfilerRange;
      break;
  }
  return Cat::Other;
}

EventPhase phase_of(std::string_view s) {
  if (s.size() != 1) return EventPhase::Other;
  switch (s[0]) {
    case 'X': return EventPhase::Complete;
    case 'i': case 'I': case 'n': return EventPhase::Instant;
    case 'C': return EventPhase::Counter;
    case 's': return EventPhase::FlowStart;
    case 't': return EventPhase::FlowStep;
    case 'f': return EventPhase::FlowEnd;
    case 'M': return EventPhase::Metadata;
    case 'B': return EventPhase::Begin;
    case 'E': return EventPhase::End;
    default: return EventPhase::Other;
  }
}

// The raw key of a field: the bytes between its quotes (keys we look for have no escapes).
std::string_view key_of(od::field& f) {
  const char* k = f.key().raw();
  size_t len = 0;
  while (k[len] != '"') ++len;  // simdjson has seen this key's closing quote
  return {k, len};
}

// A value written either as a number or as a string holding one.
enum class Kind : uint8_t { Absent, Int, String, Bad };
struct IntOrString {
  Kind kind = Kind::Absent;
  int64_t number = 0;
  std::string_view text;  // raw inside of the quotes
};

struct Fields {
  std::string_view ph, cat, name, bp;
  bool name_escaped = false, cat_escaped = false;
  bool has_ts = false, has_dur = false, bad_ts = false, bad_dur = false;
  Ns ts = 0, dur = 0;
  IntOrString pid, tid, flow_id;
  // args
  int64_t external_id = -1, correlation = -1, seq = -1, fwd_tid = -1, py_id = -1, py_parent = -1;
  int64_t device = -1, stream = -1;
  // Totals stay -1 when the event has none (the 2021 format writes only Bytes).
  int64_t bytes = 0, total_allocated = -1, total_reserved = -1, device_type = -1, device_id = -1;
  uint64_t addr = 0;
  std::string_view meta_name;  // args.name / args.labels of metadata
  bool meta_name_escaped = false;
  int64_t sort_index = 0;
  bool has_sort_index = false;
  std::vector<std::pair<std::string_view, double>> numbers;  // numeric args, for counters
};

class EventParser {
 public:
  EventParser(const char* buf, size_t n, ChunkOut& out) : buf_(buf), n_(n), out_(out) {}

  // Parses the object in [begin, end). A tentative parse checks a guessed extent: it warns
  // about nothing and returns false unless the object is well-formed and fills it exactly.
  bool parse(size_t begin, size_t end, bool tentative);

 private:
  bool read_fields(od::object& obj, Fields& f, size_t at);
  bool read_args(od::object& args, Fields& f, size_t at);
  void emit(const Fields& f, size_t at);
  StrId intern(std::string_view raw, bool escaped);
  uint8_t category(std::string_view raw, bool escaped);
  uint32_t track(const IntOrString& pid, const IntOrString& tid);

  const char* buf_;
  size_t n_;
  ChunkOut& out_;
  od::parser parser_;
  std::string scratch_, unescaped_;
  bool quiet_ = false;
  RawTrackKey last_key_{};
  uint32_t last_track_ = UINT32_MAX;
};

// Reads a string value's raw inside (no quotes). False when the value is not a string.
bool raw_string(od::value v, std::string_view& s, bool& escaped) {
  std::string_view t = json::trim_token(v.raw_json_token());
  if (t.size() < 2 || t.front() != '"' || t.back() != '"') return false;
  s = t.substr(1, t.size() - 2);
  escaped = s.find('\\') != std::string_view::npos;
  return true;
}

bool read_int(od::value v, int64_t& out) {
  return json::parse_int(v.raw_json_token(), out);
}

// A `ts` or `dur` in microseconds: a JSON number, or (torch_npu writes them so) a string holding
// one, read with the same exact rounding. Numbers, by far the most common, are tried first.
bool read_micros(od::value v, Ns& ns) {
  std::string_view t = v.raw_json_token();
  if (t.empty() || t.front() != '"') return json::micros_to_ns(t, ns);
  t = json::trim_token(t);
  if (t.size() < 3 || t.back() != '"') return false;
  t = t.substr(1, t.size() - 2);
  // Escapes or spaces inside the quotes make it no plain decimal number.
  if (json::is_ws(t.front()) || json::is_ws(t.back()) || t.find('\\') != std::string_view::npos) return false;
  return json::micros_to_ns(t, ns);
}

IntOrString read_int_or_string(od::value v) {
  IntOrString r;
  od::json_type type;
  if (v.type().get(type)) {
    r.kind = Kind::Bad;
    return r;
  }
  if (type == od::json_type::number) {
    std::string_view t = v.raw_json_token();
    if (!json::parse_int(t, r.number)) {
      // A fractional or huge id: keep it distinct by its text.
      double d;
      if (v.get_double().get(d)) {
        r.kind = Kind::Bad;
        return r;
      }
      r.number = int64_t(hash_bytes(t.data(), json::trim_token(t).size()) >> 1);
    }
    r.kind = Kind::Int;
  } else if (type == od::json_type::string) {
    bool escaped;
    if (!raw_string(v, r.text, escaped)) {
      r.kind = Kind::Bad;
      return r;
    }
    r.kind = json::parse_int(r.text, r.number) ? Kind::Int : Kind::String;
  } else {
    r.kind = Kind::Bad;
  }
  return r;
}

StrId EventParser::intern(std::string_view raw, bool escaped) {
  if (!escaped) return out_.strings.intern(raw);
  unescaped_.clear();
  if (!json::unescape(raw, unescaped_)) return out_.strings.intern(raw);
  return out_.strings.intern(unescaped_);
}

uint8_t EventParser::category(std::string_view raw, bool escaped) {
  std::string s;
  if (escaped) json::unescape(raw, s);
  std::string_view name = escaped ? std::string_view(s) : raw;
  Cat c = known_category(name);
  if (c != Cat::Other) return uint8_t(c);
  for (size_t i = size_t(Cat::Count); i < out_.categories.size(); ++i)
    if (out_.categories[i] == name) return uint8_t(i);
  if (out_.categories.size() >= 255) return uint8_t(Cat::Other);
  out_.categories.emplace_back(name);
  out_.category_kinds.push_back(device_category_kind(name));
  out_.per_category.push_back(0);
  return uint8_t(out_.categories.size() - 1);
}

uint32_t EventParser::track(const IntOrString& pid, const IntOrString& tid) {
  RawTrackKey key;
  if (pid.kind == Kind::String) key.pid_s = out_.strings.intern(pid.text);
  else key.pid = pid.number;
  if (tid.kind == Kind::String) key.tid_s = out_.strings.intern(tid.text);
  else key.tid = tid.number;
  if (last_track_ != UINT32_MAX && key == last_key_) return last_track_;
  auto [it, added] = out_.track_index.try_emplace(key, uint32_t(out_.track_keys.size()));
  if (added) {
    out_.track_keys.push_back(key);
    out_.track_info.emplace_back();
  }
  last_key_ = key;
  last_track_ = it->second;
  return it->second;
}

bool EventParser::read_args(od::object& args, Fields& f, size_t at) {
  for (auto field_result : args) {
    od::field field;
    if (std::move(field_result).get(field)) {
      if (!quiet_) out_.warn(at, "malformed args");
      return false;
    }
    std::string_view k = key_of(field);
    od::value v = field.value();
    int64_t* target = nullptr;
    switch (k.size()) {
      case 4:
        if (k == "name") {
          raw_string(v, f.meta_name, f.meta_name_escaped);
          continue;
        }
        if (k == "Addr") {
          int64_t a;
          if (read_int(v, a)) f.addr = uint64_t(a);
          continue;
        }
        break;
      case 5:
        if (k == "Bytes") target = &f.bytes;
        break;
      case 6:
        if (k == "stream") target = &f.stream;
        else if (k == "device") target = &f.device;
        else if (k == "labels") {
          raw_string(v, f.meta_name, f.meta_name_escaped);
          continue;
        }
        break;
      case 9:
        if (k == "Python id") target = &f.py_id;
        else if (k == "Device Id") target = &f.device_id;
        break;
      case 10:
        if (k == "sort_index") {
          f.has_sort_index = read_int(v, f.sort_index);
          continue;
        }
        break;
      case 11:
        if (k == "External id" || k == "external id") target = &f.external_id;
        else if (k == "correlation") target = &f.correlation;
        else if (k == "Device Type") target = &f.device_type;
        break;
      case 13:
        if (k == "Fwd thread id") target = &f.fwd_tid;
        break;
      case 14:
        if (k == "Total Reserved") target = &f.total_reserved;
        break;
      case 15:
        if (k == "Sequence number") target = &f.seq;
        else if (k == "Total Allocated") target = &f.total_allocated;
        break;
      case 16:
        if (k == "Python parent id") target = &f.py_parent;
        break;
    }
    if (target) {
      if (!read_int(v, *target)) *target = -1;
      continue;
    }
    if (f.ph.empty() || f.ph == "C") {
      double d;
      if (!v.get_double().get(d)) f.numbers.emplace_back(k, d);
    }
  }
  return true;
}

bool EventParser::read_fields(od::object& obj, Fields& f, size_t at) {
  for (auto field_result : obj) {
    od::field field;
    if (std::move(field_result).get(field)) {
      if (!quiet_) out_.warn(at, "malformed event object");
      return false;
    }
    std::string_view k = key_of(field);
    od::value v = field.value();
    switch (k.size()) {
      case 2:
        if (k == "ph") {
          bool esc;
          if (!raw_string(v, f.ph, esc)) f.ph = "?";
        } else if (k == "ts") {
          f.has_ts = true;
          f.bad_ts = !read_micros(v, f.ts);
        } else if (k == "id") {
          f.flow_id = read_int_or_string(v);
        } else if (k == "bp") {
          bool esc;
          raw_string(v, f.bp, esc);
        }
        break;
      case 3:
        if (k == "cat") {
          if (!raw_string(v, f.cat, f.cat_escaped)) f.cat = {};
        } else if (k == "dur") {
          f.has_dur = true;
          f.bad_dur = !read_micros(v, f.dur);
        } else if (k == "pid") {
          f.pid = read_int_or_string(v);
        } else if (k == "tid") {
          f.tid = read_int_or_string(v);
        }
        break;
      case 4:
        if (k == "name") {
          if (!raw_string(v, f.name, f.name_escaped)) f.name = {};
        } else if (k == "args") {
          od::object args;
          if (v.get_object().get(args)) continue;  // args of another type: ignore
          if (!read_args(args, f, at)) return false;
        }
        break;
    }
  }
  return true;
}

bool EventParser::parse(size_t begin, size_t end, bool tentative) {
  size_t len = end - begin;
  const char* p = buf_ + begin;
  od::document doc;
  auto err = parser_.iterate(p, len, len + (n_ - end) + kSourcePadding).get(doc);
  Fields f;
  od::object obj;
  if (!err) err = doc.get_object().get(obj);
  quiet_ = tentative;
  bool ok = !err && read_fields(obj, f, begin);
  quiet_ = false;
  if (tentative) {
    const char* rest;
    if (!ok || !doc.current_location().get(rest)) return false;  // trailing content: wrong extent
    emit(f, begin);
    return true;
  }
  if (err == simdjson::UTF8_ERROR || (!ok && !err && !simdjson::validate_utf8(p, len))) {
    // Invalid UTF-8 inside a name is seen in real traces: repair a copy and go on. The
    // fields point into the copy until emit() has interned them.
    scratch_.assign(p, len);
    size_t fixed = json::repair_utf8(scratch_.data(), scratch_.size());
    scratch_.append(kSourcePadding, ' ');
    f = Fields();
    err = parser_.iterate(scratch_.data(), len, scratch_.size()).get(doc);
    if (!err) err = doc.get_object().get(obj);
    ok = !err && read_fields(obj, f, begin);
    if (ok) out_.warn(begin, "replaced " + std::to_string(fixed) + " invalid UTF-8 byte(s)");
  }
  if (err) {
    out_.warn(begin, std::string("malformed event: ") + simdjson::error_message(err));
    return false;
  }
  if (!ok) return false;
  emit(f, begin);
  return true;
}

void EventParser::emit(const Fields& f, size_t at) {
  EventPhase ph = phase_of(f.ph);
  out_.per_phase[size_t(ph)]++;
  uint8_t cat = f.cat.data() ? category(f.cat, f.cat_escaped) : uint8_t(Cat::None);
  out_.per_category[cat]++;
  if (f.ph.empty()) {
    out_.warn(at, "event without \"ph\"");
    return;
  }
  if (f.pid.kind == Kind::Bad || f.tid.kind == Kind::Bad) {
    out_.warn(at, "pid or tid is neither a number nor a string");
    return;
  }
  if (ph == EventPhase::Metadata) {
    MetaKind kind;
    if (f.name == "process_name") kind = MetaKind::ProcessName;
    else if (f.name == "process_labels") kind = MetaKind::ProcessLabels;
    else if (f.name == "process_sort_index") kind = MetaKind::ProcessSortIndex;
    else if (f.name == "thread_name") kind = MetaKind::ThreadName;
    else if (f.name == "thread_sort_index") kind = MetaKind::ThreadSortIndex;
    else return;
    StrId text = f.meta_name.data() ? intern(f.meta_name, f.meta_name_escaped) : kNoStr;
    if (text == kNoStr && !f.has_sort_index) return;  // args stripped
    out_.metas.push_back({kind, track(f.pid, f.tid), text, f.sort_index});
    return;
  }
  if (!f.has_ts || f.bad_ts) {
    out_.warn(at, f.has_ts ? "\"ts\" is not a finite number of microseconds in range" : "event without \"ts\"");
    return;
  }
  if (ph == EventPhase::FlowStart || ph == EventPhase::FlowEnd || ph == EventPhase::FlowStep) {
    if (f.flow_id.kind == Kind::Absent || f.flow_id.kind == Kind::Bad) {
      out_.warn(at, "flow event without a usable \"id\"");
      return;
    }
    int64_t id = f.flow_id.kind == Kind::Int ? f.flow_id.number
                                            : int64_t(hash_bytes(f.flow_id.text.data(), f.flow_id.text.size()) >> 1);
    out_.flows.push_back({f.ts, id, at, track(f.pid, f.tid), cat, ph, ph == EventPhase::FlowEnd && f.bp != "e"});
    return;
  }
  if (ph == EventPhase::Counter) {
    uint32_t t = track(f.pid, f.tid);
    StrId name = intern(f.name, f.name_escaped);
    for (auto& [key, value] : f.numbers) out_.counters.push_back({f.ts, t, name, out_.strings.intern(key), value});
    return;
  }
  if (ph == EventPhase::Instant && f.name == "[memory]") {
    auto& m = out_.memory;
    m.ts.push_back(f.ts);
    m.bytes.push_back(f.bytes);
    m.total_allocated.push_back(f.total_allocated);
    m.total_reserved.push_back(f.total_reserved);
    m.addr.push_back(f.addr);
    m.device_type.push_back(int8_t(f.device_type));
    m.device_id.push_back(int16_t(f.device_id));
    m.track.push_back(track(f.pid, f.tid));
    return;
  }
  if (ph != EventPhase::Complete && ph != EventPhase::Instant && ph != EventPhase::Begin && ph != EventPhase::End) {
    out_.warn(at, "unsupported phase \"" + std::string(f.ph.substr(0, 8)) + "\"");
    return;
  }
  Ns dur = 0;
  if (ph == EventPhase::Complete) {
    if (!f.has_dur || f.bad_dur) {
      out_.warn(at, f.has_dur ? "\"dur\" is not a finite number of microseconds in range"
                              : "complete event without \"dur\"");
      return;
    }
    dur = f.dur;
    if (dur < 0) {
      out_.warn(at, "negative duration clamped to 0");
      dur = 0;
    }
    if (f.ts > INT64_MAX - dur) {
      out_.warn(at, "event ends beyond the representable time range");
      return;
    }
  }
  auto e = uint32_t(out_.start.size());
  uint32_t t = track(f.pid, f.tid);
  Cat c = out_.category_kinds[cat];
  bool gpu_side = carries_correlation(c);
  out_.start.push_back(f.ts);
  out_.dur.push_back(dur);
  out_.name.push_back(f.name.data() ? intern(f.name, f.name_escaped) : out_.strings.intern(""));
  out_.cat.push_back(cat);
  out_.phase.push_back(ph);
  out_.id.push_back(gpu_side && f.correlation >= 0 ? f.correlation : f.external_id);
  out_.offset.push_back(at);
  out_.track.push_back(t);
  if (f.seq >= 0) out_.seqs.push_back({e, f.seq, f.fwd_tid});
  if (f.py_id >= 0 || f.py_parent >= 0) out_.pythons.push_back({e, f.py_id, f.py_parent});
  if (is_gpu_cat(c)) {
    auto& info = out_.track_info[t];
    if (info.device < 0) info.device = f.device;
    if (info.stream < 0) info.stream = f.stream;
  }
}

// A guess at the end of the object starting at p[pos]: the `}` before the next `}, {`
// separator. Right for every event but the array's last, unless a separator-like run
// occurs inside the event; the tentative parse tells. 0 when there is no guess.
size_t guess_object_end(const char* p, size_t pos, size_t n) {
  size_t next = json::next_event_start(p, pos + 1, n);
  if (next >= n) return 0;
  size_t e = next;
  while (e > pos && json::is_ws(p[e - 1])) --e;
  if (e > pos && p[e - 1] == ',') --e;
  while (e > pos && json::is_ws(p[e - 1])) --e;
  return e > pos + 1 && p[e - 1] == '}' ? e : 0;
}

}  // namespace

void parse_entries(const char* buf, size_t n, size_t begin, size_t limit, ChunkOut& out, Progress* progress) {
  // Reserve for a generous estimate of the events ahead: growing by copies touches twice
  // the memory, and untouched reserved pages cost nothing.
  size_t estimate = (std::min(limit, n) - std::min(begin, n)) / 96 + 16;
  reserve_huge(out.start, estimate);
  reserve_huge(out.dur, estimate);
  reserve_huge(out.name, estimate);
  reserve_huge(out.cat, estimate);
  reserve_huge(out.phase, estimate);
  reserve_huge(out.id, estimate);
  reserve_huge(out.offset, estimate);
  reserve_huge(out.track, estimate);
  reserve_huge(out.flows, estimate / 2);
  EventParser parser(buf, n, out);
  bool guessing = true;
  unsigned misses = 0;
  out.begin = begin;
  size_t pos = begin, reported = begin;
  while (true) {
    if (pos >= n) {
      out.truncated = true;
      out.next = n;
      break;
    }
    if (pos >= limit) {
      out.next = pos;
      break;
    }
    // Guessing the extent from the separator before the next event and letting simdjson
    // check it is much cheaper than matching braces first; match them only when it fails.
    size_t end = 0;
    if (guessing && buf[pos] == '{') {
      size_t guess = guess_object_end(buf, pos, std::min(n, limit + (size_t(1) << 20)));
      if (guess && parser.parse(pos, guess, true)) {
        misses = 0;
        end = guess;
      } else if (++misses > 16) {
        guessing = false;  // a layout the guess does not fit
      }
    }
    json::ScanError err = end ? json::ScanError::None : json::value_end(buf, pos, n, end);
    if (err == json::ScanError::Truncated) {
      out.truncated = true;
      out.next = pos;
      break;
    }
    if (err == json::ScanError::Malformed) {
      out.status = Status::invalid("unexpected character '" + std::string(1, buf[pos]) + "' at byte " +
                                   std::to_string(pos) + " in traceEvents");
      out.next = pos;
      break;
    }
    if (misses == 0 && guessing && buf[pos] == '{') {
      // parsed above
    } else if (buf[pos] == '{') {
      parser.parse(pos, end, false);
    } else {
      out.warn(pos, "traceEvents entry is not an object");
    }
    ++out.entries;
    pos = json::skip_ws(buf, end, n);
    if (pos < n && buf[pos] == ',') {
      pos = json::skip_ws(buf, pos + 1, n);
    } else if (pos < n && buf[pos] == ']') {
      out.array_closed = true;
      out.next = pos;
      break;
    } else if (pos >= n) {
      out.truncated = true;
      out.next = n;
      break;
    } else {
      out.status = Status::invalid("expected ',' or ']' after the event at byte " + std::to_string(end) + ", found '" +
                                   std::string(1, buf[pos]) + "' at byte " + std::to_string(pos));
      out.next = pos;
      break;
    }
    if (progress && pos - reported > (1u << 20)) {
      progress->done.fetch_add(pos - reported, std::memory_order_relaxed);
      reported = pos;
      if (progress->cancelled()) {
        out.status = Status::cancelled();
        out.next = pos;
        break;
      }
    }
  }
  if (progress) progress->done.fetch_add(pos > reported ? pos - reported : 0, std::memory_order_relaxed);
}

}  // namespace strata
