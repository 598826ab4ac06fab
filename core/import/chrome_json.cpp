// Chrome-trace JSON, the format of every PyTorch profiler and of Strata's own agent: an
// object with a traceEvents array (and deviceProperties, distributedInfo, … beside it) or a
// bare array. Four importers share the parser; they differ in what they expect
// (ChromeJsonRules): Kineto's traces, the 2021 TensorBoard plugin's (Operator, Runtime, Kernel
// categories), the legacy autograd profiler's (no categories, whole microseconds) and
// torch_npu's (an Ascend device's tasks, times written as strings).
#include "core/import/importer.h"
#include "core/import/json_args.h"
#include "core/json_scan.h"
#include "core/kineto_parse.h"
#include "core/model_build.h"
#include "core/parallel.h"

#include <simdjson.h>

#include <algorithm>
#include <chrono>
#include <thread>

namespace strata {

namespace od = simdjson::ondemand;

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string read_string(od::value v) {
  std::string_view s;
  if (!v.get_string().get(s)) return std::string(s);
  int64_t i;
  if (!v.get_int64().get(i)) return std::to_string(i);
  return {};
}

int64_t read_number(od::value v) {
  int64_t i;
  if (!v.get_int64().get(i)) return i;
  double d;
  if (!v.get_double().get(d) && d > -9e18 && d < 9e18) return int64_t(d);
  return -1;
}

// A scalar's text: a string unescaped, anything else as written.
std::string scalar_text(std::string_view raw) {
  raw = json::trim_token(raw);
  if (raw.size() < 2 || raw.front() != '"' || raw.back() != '"') return std::string(raw);
  std::string out;
  if (!json::unescape(raw.substr(1, raw.size() - 2), out)) return std::string(raw.substr(1, raw.size() - 2));
  return out;
}

// Top-level keys other than traceEvents. Values are small; each is parsed on its own.
class HeaderReader {
 public:
  HeaderReader(const SourceBuffer& src, TraceModel& m) : src_(src), m_(m) {}

  void read(std::string_view key, size_t begin, size_t end) {
    if (key != "deviceProperties" && key != "distributedInfo" && key != "baseTimeNanoseconds" &&
        key != "displayTimeUnit" && key != "schemaVersion" && key != "traceName")
      return;
    std::string_view raw(src_.data() + begin, end - begin);
    if (key == "baseTimeNanoseconds") {
      int64_t v;
      if (json::parse_int(raw, v) && v > 0) m_.base_time_ns = v;
      return;
    }
    if (key == "displayTimeUnit") return void(m_.display_time_unit = scalar_text(raw));
    if (key == "schemaVersion") return void(m_.schema_version = scalar_text(raw));
    if (key == "traceName") return void(m_.trace_name = scalar_text(raw));
    od::document doc;
    if (parser_.iterate(raw.data(), raw.size(), src_.size() - begin + kSourcePadding).get(doc)) return;
    if (key == "deviceProperties") {
      od::array arr;
      if (doc.get_array().get(arr)) return;
      for (auto item : arr) {
        od::object o;
        if (item.get_object().get(o)) continue;
        DeviceInfo d;
        for (auto f : o) {
          std::string_view k;
          if (f.unescaped_key().get(k)) break;
          if (k == "id") d.id = read_number(f.value());
          else if (k == "name") d.name = read_string(f.value());
          else if (k == "totalGlobalMem") d.total_global_mem = read_number(f.value());
          else if (k == "computeMajor") d.compute_major = read_number(f.value());
          else if (k == "computeMinor") d.compute_minor = read_number(f.value());
          else if (k == "numSms") d.num_sms = read_number(f.value());
        }
        m_.devices.push_back(std::move(d));
      }
    } else if (key == "distributedInfo") {
      od::object o;
      if (doc.get_object().get(o)) return;
      for (auto f : o) {
        std::string_view k;
        if (f.unescaped_key().get(k)) break;
        if (k == "backend") m_.distributed.backend = read_string(f.value());
        else if (k == "rank") m_.distributed.rank = read_number(f.value());
        else if (k == "world_size") m_.distributed.world_size = read_number(f.value());
      }
    }
  }

 private:
  const SourceBuffer& src_;
  TraceModel& m_;
  od::parser parser_;
};

// Malformed input, thrown from deep in the top-level scan to load_chrome_json, which returns it
// as Status::invalid: it never leaves this file.
struct Fail {
  std::string message;
};

// Walks the keys of the top-level object from `pos` (just after `{` or a `,`). Returns the
// position of the traceEvents array's `[`, or n when the object ended without one.
size_t scan_object_keys(const SourceBuffer& src, size_t pos, HeaderReader& header, const std::string& path) {
  const char* p = src.data();
  size_t n = src.size();
  while (true) {
    pos = json::skip_ws(p, pos, n);
    if (pos >= n) throw Fail{path + ": unexpected end of file at byte " + std::to_string(pos) + " in the top-level object"};
    if (p[pos] == '}') return n;
    if (p[pos] == ',') {
      ++pos;
      continue;
    }
    if (p[pos] != '"') throw Fail{path + ": expected a key at byte " + std::to_string(pos)};
    size_t key_end;
    if (json::value_end(p, pos, n, key_end) != json::ScanError::None)
      throw Fail{path + ": unterminated key at byte " + std::to_string(pos)};
    std::string_view key(p + pos + 1, key_end - pos - 2);
    pos = json::skip_ws(p, key_end, n);
    if (pos >= n || p[pos] != ':') throw Fail{path + ": expected ':' at byte " + std::to_string(pos)};
    pos = json::skip_ws(p, pos + 1, n);
    if (key == "traceEvents") {
      if (pos >= n || p[pos] != '[')
        throw Fail{path + ": \"traceEvents\" at byte " + std::to_string(pos) + " is not an array"};
      return pos;
    }
    size_t end;
    auto err = json::value_end(p, pos, n, end);
    if (err == json::ScanError::Truncated)
      throw Fail{path + ": file ends inside the value of \"" + std::string(key) + "\" (byte " + std::to_string(pos) + ")"};
    if (err != json::ScanError::None)
      throw Fail{path + ": malformed value of \"" + std::string(key) + "\" at byte " + std::to_string(pos)};
    header.read(key, pos, end);
    pos = end;
  }
}

std::vector<ChunkOut> parse_array(const SourceBuffer& src, size_t first, unsigned threads, Progress* progress) {
  const char* p = src.data();
  size_t n = src.size();
  // Cut at likely event boundaries; each chunk's own parse proves or disproves the next cut.
  size_t bytes = n - first;
  size_t pieces = threads <= 1 || bytes < (4u << 20) ? 1 : std::min<size_t>(threads * 8, bytes / (1u << 20));
  std::vector<size_t> starts{first};
  for (size_t k = 1; k < pieces; ++k) {
    size_t s = json::next_event_start(p, first + bytes * k / pieces, n);
    if (s < n && s > starts.back()) starts.push_back(s);
  }
  std::vector<ChunkOut> chunks(starts.size());
  auto limit = [&](size_t k) { return k + 1 < starts.size() ? starts[k + 1] : n; };
  parallel_for(threads, chunks.size(), [&](size_t k) { parse_entries(p, n, starts[k], limit(k), chunks[k], progress); });

  // Accept chunks in order while each starts where the previous one stopped; re-parse
  // from the right place where a cut was wrong, and drop what lies past the array's end.
  size_t expected = first;
  for (size_t k = 0; k < chunks.size(); ++k) {
    if (chunks[k].begin != expected) {
      chunks[k] = ChunkOut();
      parse_entries(p, n, expected, std::max(expected, limit(k)), chunks[k], progress);
    }
    expected = chunks[k].next;
    if (chunks[k].array_closed || chunks[k].truncated || !chunks[k].status.is_ok()) {
      chunks.resize(k + 1);
      break;
    }
  }
  return chunks;
}

void add_base_time(TraceModel& m) {
  int64_t base = m.base_time_ns;
  if (base == 0) return;
  if (m.time_end > INT64_MAX - base) {
    m.warnings.push_back("baseTimeNanoseconds would overflow the time range; ignored");
    ++m.warning_count;
    m.base_time_ns = 0;
    return;
  }
  for (auto& t : m.ev.start) t += base;
  for (auto& t : m.memory.ts) t += base;
  for (auto& s : m.counters)
    for (auto& t : s.ts) t += base;
  m.time_begin += base;
  m.time_end += base;
}


size_t first_non_space(std::string_view head) {
  size_t pos = json::skip_ws(head.data(), 0, head.size());
  if (head.size() - pos >= 3 && head.substr(pos, 3) == "\xEF\xBB\xBF") pos = json::skip_ws(head.data(), pos + 3, head.size());
  return pos;
}

bool looks_json(std::string_view head) {
  size_t pos = first_non_space(head);
  return pos < head.size() && (head[pos] == '{' || head[pos] == '[');
}

// Any JSON that is an object or an array: the fallback that says what is wrong with a file.
int sniff_kineto(std::string_view head) { return looks_json(head) ? 10 : 1; }

int sniff_tensorboard_2021(std::string_view head) {
  if (!looks_json(head)) return 0;
  for (std::string_view c : {"\"cat\": \"Operator\"", "\"cat\": \"Runtime\"", "\"cat\": \"Kernel\"", "\"cat\":\"Operator\""})
    if (head.find(c) != std::string_view::npos) return 60;
  return 0;
}

// A bare array of events without categories.
int sniff_autograd_legacy(std::string_view head) {
  size_t pos = first_non_space(head);
  if (pos >= head.size() || head[pos] != '[') return 0;
  return head.find("\"ph\"") != std::string_view::npos && head.find("\"cat\"") == std::string_view::npos ? 80 : 0;
}

// Times written as strings, or Ascend's own names.
int sniff_torch_npu(std::string_view head) {
  if (!looks_json(head)) return 0;
  for (std::string_view k : {"\"ts\": \"", "\"ts\":\"", "Ascend Hardware", "AscendCL@"})
    if (head.find(k) != std::string_view::npos) return 90;
  return 0;
}

Status load_chrome_json(const ImportInput& in, TraceModel& m, const ChromeJsonRules& rules) {
  const std::string& path = in.path;
  Progress* progress = in.progress;
  const SourceBuffer* source = in.source.get();
  const char* p = source->data();
  size_t n = source->size();
  if (progress) {
    progress->enter(Stage::Parsing);
    progress->total = n;
    progress->done = 0;
  }
  try {
    auto t1 = Clock::now();
    HeaderReader header(*source, m);
    size_t pos = json::skip_ws(p, 0, n);
    if (n - pos >= 3 && std::string_view(p + pos, 3) == "\xEF\xBB\xBF") pos = json::skip_ws(p, pos + 3, n);
    if (pos >= n) throw Fail{path + ": no JSON in the file (only whitespace)"};
    bool object = p[pos] == '{';
    size_t array = object ? scan_object_keys(*source, pos + 1, header, path) : pos;
    if (!object && p[pos] != '[')
      throw Fail{path + ": not a trace: expected '{' or '[' at byte " + std::to_string(pos) + ", found '" +
                 std::string(1, p[pos]) + "'"};
    if (array >= n) throw Fail{path + ": the top-level object has no \"traceEvents\" array"};

    size_t first = json::skip_ws(p, array + 1, n);
    std::vector<ChunkOut> chunks;
    size_t after = first;
    bool closed = first < n && p[first] == ']';
    if (!closed && first < n) {
      unsigned threads = std::max(1u, in.threads);
      chunks = parse_array(*source, first, threads, progress);
      const ChunkOut& last = chunks.back();
      closed = last.array_closed;
      after = last.next;
      uint64_t parsed = 0;
      for (auto& c : chunks) parsed += c.entries;
      if (progress && progress->cancelled()) return Status::cancelled(path + ": cancelled");
      if (!last.status.is_ok() || last.truncated) {
        std::string what = !last.status.is_ok() ? last.status.message()
                                               : "the file ends inside traceEvents at byte " + std::to_string(n) +
                                                     " (truncated?)";
        if (parsed == 0) throw Fail{path + ": " + what};
        m.warnings.insert(m.warnings.begin(), what + "; kept the " + std::to_string(parsed) + " events before byte " +
                                                  std::to_string(last.next));
        ++m.warning_count;
      }
    } else if (first >= n) {
      throw Fail{path + ": the file ends inside traceEvents at byte " + std::to_string(n) + " (truncated?)"};
    }
    if (closed && object) {
      try {
        scan_object_keys(*source, after + 1, header, path);
      } catch (const Fail& f) {
        m.warnings.push_back(f.message + " (after traceEvents; events are complete)");
        ++m.warning_count;
      }
    }
    m.stats.seconds_parse = seconds_since(t1);

    auto t2 = Clock::now();
    if (progress) progress->enter(Stage::Building);
    build_model(chunks, m, progress, rules.legacy_autograd);
    if (progress && progress->cancelled()) return Status::cancelled(path + ": cancelled");
    add_base_time(m);
    m.stats.seconds_build = seconds_since(t2);
  } catch (const Fail& f) {
    return Status::invalid(f.message);
  }
  m.event_args = std::make_unique<JsonEventArgs>(m);
  return Status::ok();
}

Status load_kineto(const ImportInput& in, TraceModel& m) { return load_chrome_json(in, m, {}); }
Status load_legacy(const ImportInput& in, TraceModel& m) { return load_chrome_json(in, m, {.legacy_autograd = true}); }

}  // namespace

const Importer kKinetoImporter{"kineto", "PyTorch profiler (Kineto) Chrome-trace JSON, Strata's agent's traces", sniff_kineto, load_kineto};
const Importer kTensorBoard2021Importer{"tensorboard-2021", "the 2021 TensorBoard plugin's traces (Operator, Runtime, Kernel categories)",
                                       sniff_tensorboard_2021, load_kineto};
const Importer kAutogradLegacyImporter{"autograd-legacy", "the legacy autograd profiler's export (no categories, whole microseconds)",
                                       sniff_autograd_legacy, load_legacy};
const Importer kTorchNpuImporter{"torch_npu", "torch_npu (Ascend) traces: an NPU's tasks, string times, AscendCL calls",
                                 sniff_torch_npu, load_kineto};

}  // namespace strata
