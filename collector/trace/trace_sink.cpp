#include "trace_sink.h"

namespace strata::collector {

bool FileSink::open(const std::string& path, bool exclusive) {
  accepted_ = 0;
  event_ends_.clear();
  stored_ = 0;
  return file_.open(path, {.exclusive = exclusive, .regular_only = true});
}

void FileSink::write(std::string_view text) {
  file_.write(text);
  accepted_ += text.size();
  settle();
}

void FileSink::write_event(std::string_view text) {
  if (!file_.status().is_ok()) return;  // nothing more reaches the file
  file_.write(text);
  accepted_ += text.size();
  event_ends_.push_back(accepted_);
  settle();
}

void FileSink::flush() {
  file_.flush();
  settle();
}

bool FileSink::close() {
  const bool ok = file_.close();
  settle();
  return ok;
}

void FileSink::settle() {
  while (!event_ends_.empty() && event_ends_.front() <= file_.bytes_written()) {
    event_ends_.pop_front();
    ++stored_;
  }
  if (!file_.status().is_ok()) event_ends_.clear();  // never to be written
}

}  // namespace strata::collector
