// A file written plain, or gzip when its name ends in ".gz". Writes are buffered and errors
// are sticky: after the first failure nothing more is written and status() says why, so a
// full disk never takes the caller down.
#pragma once

#include "core/base/status.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace strata {

struct OutputFileOptions {
  bool exclusive = false;  // fail with EEXIST rather than replace an existing file
  // Refuse anything but a regular file -- a FIFO, a device, a directory, a final symbolic
  // link -- without blocking in open() and without opening a device at all: for a writer
  // that must never hang or be signalled (SIGPIPE) because of where it was told to write.
  bool regular_only = false;
};

class OutputFile {
 public:
  OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  ~OutputFile();

  bool open(const std::string& path, const OutputFileOptions& options);
  void write(std::string_view text);
  // Writes the buffered text out; gzip output gets a sync flush, so a reader can inflate
  // everything written so far while the file grows.
  bool flush();
  bool close();  // true when every byte reached the file
  // Bytes of text that reached the file: exact for plain output (a partial write counts what
  // was written), up to the last flush for gzip.
  uint64_t bytes_written() const { return written_; }
  const Status& status() const { return status_; }  // the first failure (Io), sticky
  int error_number() const { return errno_; }

 private:
  struct Deflater;
  bool write_out(const char* data, size_t size);  // every byte, or a sticky error
  bool deflate_buffer(int mode);
  void fail(const std::string& what, int err);

  int fd_ = -1;
  std::unique_ptr<Deflater> gzip_;  // null for plain output
  std::string buffer_;
  std::string path_;
  Status status_;
  int errno_ = 0;
  uint64_t written_ = 0;
};

}  // namespace strata
