// Reading a trace file into memory: plain JSON is mapped, gzip is inflated. The buffer is
// followed by at least kSourcePadding readable bytes, as simdjson requires.
#pragma once

#include "core/base/status.h"
#include "core/progress.h"

#include <cstddef>
#include <string>

namespace strata {

inline constexpr size_t kSourcePadding = 64;

class SourceBuffer {
 public:
  SourceBuffer() = default;
  SourceBuffer(SourceBuffer&& o) noexcept { *this = std::move(o); }
  SourceBuffer& operator=(SourceBuffer&& o) noexcept;
  SourceBuffer(const SourceBuffer&) = delete;
  SourceBuffer& operator=(const SourceBuffer&) = delete;
  ~SourceBuffer() { release(); }

  const char* data() const { return data_; }
  size_t size() const { return size_; }
  std::string_view view() const { return {data_, size_}; }

  static SourceBuffer allocate(size_t capacity);  // heap, uninitialised, + padding
  char* writable() { return data_; }
  size_t capacity() const { return capacity_; }
  bool grow(size_t capacity);  // heap buffers only
  void set_size(size_t n) { size_ = n; }
  static SourceBuffer map_file(int fd, size_t size);  // file mapping followed by zero padding
  static SourceBuffer allocate_pages(size_t size);     // zeroed anonymous pages, huge where possible

 private:
  void release();
  char* data_ = nullptr;
  size_t size_ = 0, capacity_ = 0;
  size_t mapped_ = 0;  // >0: a mapping of this many bytes, else heap
};

struct ReadResult {
  SourceBuffer buffer;
  uint64_t file_bytes = 0;
  bool gzip = false;
  Status status;        // not ok: nothing usable was read
  std::string warning;  // usable, but e.g. a truncated gzip stream
};

// Reads `path`; progress counts bytes of the file as stored.
ReadResult read_source(const std::string& path, Progress* progress);
// The same for bytes already in memory (`name` is used in messages); they are copied.
ReadResult read_source_bytes(const std::string& name, std::string_view bytes, Progress* progress);

}  // namespace strata
