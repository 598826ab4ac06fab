// Where a trace's text goes: a string (tests) or a file, gzipped when its name ends in .gz.
#pragma once

#include <string>
#include <string_view>

namespace strata::collector {

class TraceSink {
 public:
  virtual ~TraceSink() = default;
  virtual void write(std::string_view text) = 0;
  virtual void flush() {}
};

class StringSink final : public TraceSink {
 public:
  void write(std::string_view text) override { text_.append(text); }
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

// Writes plain or gzip output. Errors are sticky: after the first failed write the sink
// stops writing and error() says why, so a full disk never takes the job down.
class FileSink final : public TraceSink {
 public:
  FileSink() = default;
  FileSink(const FileSink&) = delete;
  FileSink& operator=(const FileSink&) = delete;
  ~FileSink() override;

  // exclusive: fail with EEXIST instead of replacing an existing file.
  bool open(const std::string& path, bool exclusive);
  void write(std::string_view text) override;
  void flush() override;
  bool close();  // true when every byte reached the file
  const std::string& error() const { return error_; }
  int error_number() const { return errno_; }

 private:
  void fail(const std::string& what);
  int fd_ = -1;
  void* gz_ = nullptr;  // gzFile, kept opaque so zlib.h stays out of this header
  std::string pending_;
  std::string path_;
  std::string error_;
  int errno_ = 0;
};

}  // namespace strata::collector
