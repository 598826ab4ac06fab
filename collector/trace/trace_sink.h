// Where a trace's text goes: a string (tests) or a file, gzipped when its name ends in .gz.
// Events are written one at a time so a sink can tell how many of them reached its output.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>

#include "core/base/output_file.h"

namespace strata::collector {

class TraceSink {
 public:
  virtual ~TraceSink() = default;
  virtual void write(std::string_view text) = 0;  // text around the events
  virtual void write_event(std::string_view text) = 0;
  virtual void flush() {}
  // Events whose every byte reached the output.
  virtual uint64_t events_stored() const = 0;
};

class StringSink final : public TraceSink {
 public:
  void write(std::string_view text) override { text_.append(text); }
  void write_event(std::string_view text) override {
    text_.append(text);
    ++events_;
  }
  uint64_t events_stored() const override { return events_; }
  const std::string& text() const { return text_; }

 private:
  std::string text_;
  uint64_t events_ = 0;
};

// A trace file, plain or gzip. Opening refuses anything but a regular file (no FIFO, device
// or final symlink) without blocking, so a recording can neither hang nor be signalled by
// where it writes; errors are sticky, so a full disk never takes the job down.
class FileSink final : public TraceSink {
 public:
  // exclusive: fail with EEXIST instead of replacing an existing file.
  bool open(const std::string& path, bool exclusive);
  void write(std::string_view text) override;
  void write_event(std::string_view text) override;
  void flush() override;
  bool close();  // true when every byte reached the file
  uint64_t events_stored() const override { return stored_; }
  const Status& status() const { return file_.status(); }  // the first failure, sticky
  int error_number() const { return file_.error_number(); }

 private:
  void settle();  // counts the events the file has taken whole

  OutputFile file_;
  uint64_t accepted_ = 0;           // bytes handed to file_
  std::deque<uint64_t> event_ends_;  // where events not yet counted end, in accepted bytes
  uint64_t stored_ = 0;
};

}  // namespace strata::collector
