// Bad input: the loader must not crash or hang; it fails with a one-line error naming the
// file and where, or loads what is usable and counts warnings.
#include "test_util.h"

#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <random>
#include <unistd.h>
#include <string>

using namespace strata;
using namespace strata::test;

namespace {

LoadResult load_named(const std::string& name, std::string_view bytes, unsigned threads = 1) {
  LoadOptions o;
  o.threads = threads;
  return load_trace_bytes(name, bytes, nullptr, o);
}

void check_error(const LoadResult& r, const std::string& name, bool with_position = true) {
  CHECK(r.model == nullptr);
  CHECK_FALSE(r.error().empty());
  CHECK(r.error().find('\n') == std::string::npos);
  CHECK(r.error().find(name) != std::string::npos);
  bool no_content = r.error().find("whitespace") != std::string::npos || r.error().find("empty") != std::string::npos;
  if (with_position && !no_content) CHECK_MESSAGE(r.error().find("byte") != std::string::npos, r.error());
}

// Either a proper error, or a model whose warnings say something was wrong.
void check_error_or_warned(const LoadResult& r, const std::string& name) {
  if (!r.model) return check_error(r, name);
  CHECK(r.model->warning_count > 0);
  CHECK_FALSE(r.model->warnings.empty());
}

std::unique_ptr<TraceModel> load_warned(const std::string& events, uint64_t warnings = 1) {
  auto r = load_named("bad.json", R"({"traceEvents":[)" + events + "]}");
  INFO("error: ", r.error());
  REQUIRE(r.model);
  CHECK(r.model->warning_count == warnings);
  return std::move(r.model);
}

const char* kGood = R"({"ph":"X","cat":"cpu_op","name":"good","pid":1,"tid":1,"ts":1,"dur":1})";

std::filesystem::path temp_path(const char* what) {
  return std::filesystem::temp_directory_path() / ("strata-test-" + std::to_string(::getpid()) + "-" + what);
}

// The ISIZE a gzip reader finds in the last 4 bytes of a (possibly truncated) stream.
uint32_t gzip_trailer(std::string_view gz) {
  uint32_t v = 0;
  if (gz.size() >= 18) std::memcpy(&v, gz.data() + gz.size() - 4, 4);
  return v;
}

// Truncates `bytes` at every `stride`-th position and loads each prefix.
void truncations(std::string_view bytes, size_t stride, const TraceModel& full) {
  bool gzip = bytes.size() >= 2 && uint8_t(bytes[0]) == 0x1f && uint8_t(bytes[1]) == 0x8b;
  size_t meaningful = bytes.find_last_not_of(" \t\r\n") + 1;
  uint64_t errors = 0, partial = 0;
  for (size_t cut = 0; cut < bytes.size(); cut += stride) {
    CAPTURE(cut);
    std::string_view prefix = bytes.substr(0, cut);
    LoadResult r = load_named("cut.json", prefix);
    if (r.model && cut >= meaningful && !gzip) {
      CHECK(r.model->warning_count == 0);
      continue;
    }
    check_error_or_warned(r, "cut.json");
    if (r.model) CHECK(r.model->ev.size() <= full.ev.size());
    (r.model ? partial : errors)++;
  }
  CHECK(errors > 0);
  CHECK(partial > 0);
}

}  // namespace

TEST_CASE("files that are not there or not files") {
  std::string missing = temp_path("missing.json").string();
  check_error(load_trace(missing), missing, false);
  std::string dir = temp_path("dir.json").string();
  std::filesystem::create_directory(dir);
  check_error(load_trace(dir), dir, false);
  std::filesystem::remove(dir);
  std::string empty = temp_path("empty.json").string();
  { std::ofstream(empty, std::ios::binary); }
  check_error(load_trace(empty), empty);
  std::filesystem::remove(empty);
  check_error(load_named("empty.json", ""), "empty.json");
  check_error(load_named("blank.json", " \n\t\r\n "), "blank.json", false);
}

TEST_CASE("not a trace: wrong top-level JSON") {
  check_error(load_named("a.json", "42"), "a.json");
  check_error(load_named("a.json", "\"traceEvents\""), "a.json");
  check_error(load_named("a.json", R"({"traceEvents":{"ph":"X"}})"), "a.json");
  check_error(load_named("a.json", R"({"traceEvents":"none"})"), "a.json");
  check_error(load_named("a.json", R"({"other":[1,2]})"), "a.json", false);
  check_error_or_warned(load_named("a.json", R"({"traceEvents":[{"ph":"X"} {"ph":"X"}]})"), "a.json");
  check_error(load_named("a.json", R"({"traceEvents":[,]})"), "a.json");
  check_error(load_named("a.json", R"({traceEvents:[]})"), "a.json");
}

TEST_CASE("truncated plain JSON at every byte of a small real trace" * doctest::timeout(120)) {
  STRATA_REQUIRE_TRACE(path, "hta-triton-a100.pt.trace.json.gz");
  LoadResult full = load_trace(path);
  REQUIRE(full.model);
  truncations(full.model->source->view(), 1, *full.model);
}

TEST_CASE("truncated plain JSON over a larger real trace" * doctest::timeout(120)) {
  STRATA_REQUIRE_TRACE(path, "hta-alexnet-a100.pt.trace.json.gz");
  LoadResult full = load_trace(path);
  REQUIRE(full.model);
  truncations(full.model->source->view(), 997, *full.model);
}

TEST_CASE("truncated gzip" * doctest::timeout(120)) {
  const std::pair<const char*, int> cases[] = {{"hta-triton-a100.pt.trace.json.gz", 1}, {"hta-alexnet-a100.pt.trace.json.gz", 7}};
  for (auto [name, stride] : cases) STRATA_SKIP_UNLESS(!find_trace(name).empty(), std::string("real trace not found: ") + name);
  for (auto [name, stride] : cases) {
    const std::string path = find_trace(name).string();
    CAPTURE(name);
    LoadResult full = load_trace(path);
    REQUIRE(full.model);
    std::string gz = read_file(path);
    truncations(gz, size_t(stride), *full.model);
  }
}

// A file cut right after an event's comma ("...},") is truncated, not complete.
TEST_CASE("truncation right after a comma is reported") {
  auto r = load_named("cut.json", std::string(R"({"traceEvents":[)") + kGood + ",\n  ");
  REQUIRE(r.model);
  CHECK(r.model->ev.size() == 1);
  CHECK(r.model->warning_count > 0);
}

// A truncated .gz's last 4 bytes are not its size: the first buffer must stay plausible.
TEST_CASE("a truncated gzip does not allocate by its garbage trailer") {
  STRATA_REQUIRE_TRACE(path, "hta-triton-a100.pt.trace.json.gz");
  std::string gz = read_file(path);
  size_t cut = 100;
  while (cut < gz.size() && gzip_trailer(std::string_view(gz).substr(0, cut)) < (1u << 30)) ++cut;
  REQUIRE(cut < gz.size());
  LoadResult r = load_named("cut.json.gz", std::string_view(gz).substr(0, cut));
  if (r.model) CHECK(r.model->source->capacity() < 1032 * cut + (1u << 20));
}

TEST_CASE("corrupt gzip") {
  STRATA_REQUIRE_TRACE(path, "hta-alexnet-a100.pt.trace.json.gz");
  std::string gz = read_file(path);
  for (size_t at : {size_t(3), size_t(20), gz.size() / 3, gz.size() / 2, gz.size() - 6}) {
    CAPTURE(at);
    std::string bad = gz;
    bad[at] = char(bad[at] ^ 0x5A);
    check_error_or_warned(load_named("corrupt.json.gz", bad), "corrupt.json.gz");
  }
  check_error(load_named("junk.gz", std::string("\x1f\x8b\x08\x00garbage-not-deflate", 24)), "junk.gz");
}

TEST_CASE("wrong JSON types in events") {
  // A string holding a number is read as the number (torch_npu writes "ts" so); any other
  // string, or another type, is not.
  auto m = load_warned(R"({"ph":"X","name":"a","pid":1,"tid":1,"ts":"12 us","dur":1},)" + std::string(kGood));
  CHECK(m->ev.size() == 1);
  CHECK(m->warnings.at(0).find("event #0 at byte 16") != std::string::npos);
  load_warned(R"({"ph":"X","name":"a","pid":1,"tid":1,"ts":true,"dur":1},)" + std::string(kGood));
  load_warned(R"({"ph":"X","name":"a","pid":1,"tid":1,"ts":1,"dur":"1.5.2"},)" + std::string(kGood));
  CHECK(load_warned(R"({"ph":"X","name":"a","pid":1,"tid":1,"ts":"12","dur":"1"},)" + std::string(kGood), 0)->ev.size() == 2);
  load_warned(R"({"ph":"X","name":"a","pid":{"x":1},"tid":1,"ts":1,"dur":1},)" + std::string(kGood));
  load_warned(R"({"ph":"X","name":"a","pid":1,"tid":[1],"ts":1,"dur":1},)" + std::string(kGood));
  load_warned(R"({"ph":"X","name":"a","pid":1,"tid":1,"ts":1,"dur":null},)" + std::string(kGood));
  load_warned(R"({"ph":"X","name":"a","pid":1,"tid":1,"ts":1},)" + std::string(kGood));
  load_warned(R"({"name":"a","pid":1,"tid":1,"ts":1,"dur":1},)" + std::string(kGood));
  load_warned(R"(17, "text", [1,2], null,)" + std::string(kGood), 4);
  load_warned(R"({"ph":"Q","name":"a","pid":1,"tid":1,"ts":1},)" + std::string(kGood));
  // args of another type are ignored; the event itself is fine.
  auto args = load_warned(R"({"ph":"X","name":"a","pid":1,"tid":1,"ts":1,"dur":1,"args":[1,{"x":2}]})", 0);
  CHECK(args->ev.size() == 1);
  // name and cat of other types load as an empty name and no category.
  auto types = load_warned(std::string(kGood) + R"(,{"ph":"X","cat":5,"name":{"n":1},"pid":1,"tid":1,"ts":1,"dur":1})", 0);
  EventId unnamed = find_event(*types, "");
  REQUIRE(unnamed != kNoEvent);
  CHECK(types->ev.category(unnamed) == Cat::None);
}

// The string table's first string may be empty.
TEST_CASE("an empty name in the first event") {
  auto m = load_warned(R"({"ph":"X","name":"","pid":1,"tid":1,"ts":1,"dur":1})", 0);
  CHECK(m->name_of(0).empty());
}

TEST_CASE("non-finite and out-of-range numbers") {
  for (const char* ts : {"NaN", "Infinity", "-Infinity", "1e400", "-1e30", "9223372036854775807", "1.5.2"}) {
    CAPTURE(ts);
    auto r = load_named("num.json", std::string(R"({"traceEvents":[{"ph":"X","name":"a","pid":1,"tid":1,"ts":)") + ts +
                                        R"(,"dur":1},)" + kGood + "]}");
    check_error_or_warned(r, "num.json");
    if (r.model) CHECK(r.model->ev.size() <= 1);
  }
  load_warned(R"({"ph":"X","name":"a","pid":1,"tid":1,"ts":1,"dur":1e400},)" + std::string(kGood));
  // An end beyond the int64 range.
  load_warned(R"({"ph":"X","name":"a","pid":1,"tid":1,"ts":9000000000000000,"dur":9000000000000000},)" +
              std::string(kGood));
}

TEST_CASE("negative durations are clamped to 0 and warned") {
  auto m = load_warned(R"({"ph":"X","name":"neg","pid":1,"tid":1,"ts":5,"dur":-3})");
  REQUIRE(m->ev.size() == 1);
  CHECK(m->ev.dur[0] == 0);
  CHECK(m->ev.start[0] == 5000);
}

TEST_CASE("events out of order nest as if sorted") {
  std::string a = R"({"ph":"X","name":"A","pid":1,"tid":1,"ts":0,"dur":100})";
  std::string b = R"({"ph":"X","name":"B","pid":1,"tid":1,"ts":10,"dur":50})";
  std::string c = R"({"ph":"X","name":"C","pid":1,"tid":1,"ts":20,"dur":5})";
  auto sorted = load_warned(a + "," + b + "," + c, 0);
  auto shuffled = load_warned(c + "," + a + "," + b, 0);
  for (const char* name : {"A", "B", "C"}) {
    CAPTURE(name);
    EventId x = find_event(*sorted, name), y = find_event(*shuffled, name);
    CHECK(sorted->ev.depth[x] == shuffled->ev.depth[y]);
    CHECK(sorted->ev.start[x] == shuffled->ev.start[y]);
  }
  CHECK(shuffled->ev.depth[find_event(*shuffled, "C")] == 2);
}

TEST_CASE("duplicate and dangling correlation and flow ids") {
  auto m = load_warned(R"(
    {"ph":"X","cat":"cuda_runtime","name":"L","pid":1,"tid":1,"ts":10,"dur":5,"args":{"correlation":1}},
    {"ph":"X","cat":"cuda_runtime","name":"L","pid":1,"tid":1,"ts":20,"dur":5,"args":{"correlation":1}},
    {"ph":"X","cat":"kernel","name":"K","pid":0,"tid":7,"ts":30,"dur":5,"args":{"correlation":1}},
    {"ph":"X","cat":"kernel","name":"K","pid":0,"tid":7,"ts":40,"dur":5,"args":{"correlation":1}},
    {"ph":"X","cat":"kernel","name":"dangling","pid":0,"tid":7,"ts":50,"dur":5,"args":{"correlation":999}},
    {"ph":"s","id":5,"pid":1,"tid":1,"ts":11,"cat":"ac2g","name":"ac2g"},
    {"ph":"s","id":5,"pid":1,"tid":1,"ts":21,"cat":"ac2g","name":"ac2g"},
    {"ph":"f","id":5,"pid":0,"tid":7,"ts":30,"cat":"ac2g","name":"ac2g","bp":"e"},
    {"ph":"f","id":5,"pid":0,"tid":7,"ts":40,"cat":"ac2g","name":"ac2g","bp":"e"},
    {"ph":"f","id":6,"pid":0,"tid":7,"ts":40,"cat":"ac2g","name":"ac2g","bp":"e"},
    {"ph":"s","id":7,"pid":1,"tid":1,"ts":12,"cat":"ac2g","name":"ac2g"},
    {"ph":"s","id":8,"pid":9,"tid":9,"ts":12,"cat":"ac2g","name":"ac2g"},
    {"ph":"f","id":8,"pid":9,"tid":9,"ts":13,"cat":"ac2g","name":"ac2g","bp":"e"},
    {"ph":"s","pid":1,"tid":1,"ts":12,"cat":"ac2g","name":"no id"})");
  CHECK(m->stats.gpu_ops == 3);
  CHECK(m->stats.gpu_ops_linked == 2);
  CHECK(m->ev.link[find_event(*m, "dangling")] == kNoEvent);
  CHECK(m->stats.flows_total == 3);
  CHECK(m->stats.flows_resolved == 2);
  CHECK(m->stats.flow_events_unmatched == 3);  // f 6, s 7, and flow 8 binding to no slice
}

TEST_CASE("100000-deep JSON nesting inside args" * doctest::timeout(60)) {
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  std::string deep_obj;
  for (int i = 0; i < 100000; ++i) deep_obj += R"({"a":)";
  deep_obj += "1" + std::string(100000, '}');
  for (const std::string& value : {deep, deep_obj}) {
    auto r = load_named("deep.json", R"({"traceEvents":[{"ph":"X","name":"a","pid":1,"tid":1,"ts":1,"dur":1,"args":{"x":)" +
                                         value + R"(,"External id":4}},)" + kGood + "]}");
    INFO("error: ", r.error());
    REQUIRE(r.model);
    CHECK(find_event(*r.model, "good") != kNoEvent);
    CHECK(r.model->ev.size() + r.model->warning_count >= 2);  // kept, or dropped with a warning
  }
}

TEST_CASE("100000 nested X events on one thread" * doctest::timeout(60)) {
  constexpr int n = 100000;
  std::string events;
  for (int i = 0; i < n; ++i)
    events += (i ? "," : "") + std::string(R"({"ph":"X","name":"n","pid":1,"tid":1,"ts":)") + std::to_string(i) +
              R"(,"dur":)" + std::to_string(2 * (n - i)) + "}";
  auto r = load_named("nested.json", R"({"traceEvents":[)" + events + "]}", 4);
  REQUIRE(r.model);
  const TraceModel& m = *r.model;
  CHECK(m.ev.size() == n);
  uint32_t t = find_track(m, 1, 1);
  REQUIRE(t != kNoTrack);
  size_t depth = m.tracks[t].levels.size();
  CHECK(depth >= 1000);
  // Depths beyond the uint16 column go to overflow rows, with a warning.
  if (depth < size_t(n)) {
    CHECK(m.tracks[t].overflow != kNoTrack);
    CHECK(m.warning_count > 0);
  }
  EventId deepest = m.tracks[t].levels.back().begin;
  CHECK(m.parent_of(deepest) != kNoEvent);
}

TEST_CASE("invalid UTF-8 in names: loads, warns, name repaired") {
  auto m = load_warned("{\"ph\":\"X\",\"name\":\"bad\xff\xfe name\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":1}," +
                       std::string(kGood));
  REQUIRE(m->ev.size() == 2);
  CHECK(find_event(*m, "bad?? name") != kNoEvent);
  CHECK(m->warnings.at(0).find("UTF-8") != std::string::npos);
}

TEST_CASE("a 10 MB single string" * doctest::timeout(60)) {
  std::string big(10u << 20, 'a');
  auto m = load_warned(R"({"ph":"X","name":")" + big + R"(","pid":1,"tid":1,"ts":1,"dur":1})", 0);
  CHECK(m->name_of(0).size() == big.size());
  auto r = load_named("open.json", R"({"traceEvents":[{"ph":"X","name":")" + big, 4);
  check_error(r, "open.json");
  r = load_named("open.json", std::string(R"({"traceEvents":[)") + kGood + R"(,{"ph":"X","name":")" + big, 4);
  check_error_or_warned(r, "open.json");
}

TEST_CASE("binary garbage" * doctest::timeout(60)) {
  std::mt19937_64 rng(12345);
  for (int round = 0; round < 20; ++round) {
    std::string bytes(size_t(1) << (8 + round % 12), '\0');
    for (char& c : bytes) c = char(rng());
    if (round % 4 == 1) bytes[0] = '{';
    if (round % 4 == 2) bytes[0] = '[';
    if (round % 4 == 3) bytes = R"({"traceEvents":[)" + std::string(kGood) + "," + bytes;
    CAPTURE(round);
    LoadResult r = load_named("garbage.bin", bytes, 2);
    if (r.model) CHECK(r.model->warning_count > 0);
    else check_error(r, "garbage.bin", false);
  }
}
