// Importers, registered by format: each says how sure it is that it reads a file (from the
// file's first bytes, decompressed) and fills the trace model from it. The loader (loader.h)
// reads the file, asks every importer and runs the surest. A new format is one importer file
// and one line in registry.cpp; docs/architecture.md says what it must fill.
#pragma once

#include "core/base/status.h"
#include "core/progress.h"
#include "core/source.h"
#include "core/trace_model.h"

#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace strata {

struct ImportInput {
  std::string path;                              // for messages
  std::shared_ptr<const SourceBuffer> source;    // the whole file, decompressed
  unsigned threads = 1;
  Progress* progress = nullptr;                  // Stage::Parsing, then Stage::Building
};

struct Importer {
  std::string_view name;     // "kineto", as `strata info` prints it
  std::string_view reads;    // what, in words
  // 0: not this format; else how sure, up to 100. `head` is the source's first bytes (up to 64 KiB).
  int (*sniff)(std::string_view head);
  // Fills `m` (events, tracks, links, args()) from the source; an error names the file and the
  // byte or event. Cancellation is Status::cancelled().
  Status (*load)(const ImportInput& in, TraceModel& m);
};

// Every registered importer (registry.cpp).
std::span<const Importer* const> importers();
// The importer surest to read a source beginning with `head`, or null when none is.
const Importer* importer_for(std::string_view head);

// Chrome-trace JSON (import/chrome_json.cpp): Kineto's traces, the 2021 TensorBoard plugin's,
// the legacy autograd profiler's, torch_npu's; what differs between them.
struct ChromeJsonRules {
  // The legacy autograd profiler's: no categories (a name that is not an operator's is a
  // record_function range), whole microseconds (a child may end 1 µs after its parent).
  bool legacy_autograd = false;
};
extern const Importer kKinetoImporter, kTensorBoard2021Importer, kAutogradLegacyImporter, kTorchNpuImporter;

}  // namespace strata
