// One way to fail: a Status (a code and one line that says what went wrong, naming the file
// and the byte or event) and Result<T> (a value or a Status). Cancellation is a code like the
// others, so a cancelled step and a failed one travel the same way.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace strata {

enum class StatusCode : unsigned char {
  Ok,
  Invalid,      // the input is not what it should be (a malformed or truncated file)
  NotFound,     // no such file, event or item
  Io,           // reading or writing failed
  Unsupported,  // a format or feature Strata does not read
  Cancelled,    // someone asked to stop
  OutOfMemory,
  Internal,
};

class Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status ok() { return {}; }
  static Status invalid(std::string m) { return {StatusCode::Invalid, std::move(m)}; }
  static Status not_found(std::string m) { return {StatusCode::NotFound, std::move(m)}; }
  static Status io(std::string m) { return {StatusCode::Io, std::move(m)}; }
  static Status unsupported(std::string m) { return {StatusCode::Unsupported, std::move(m)}; }
  static Status cancelled(std::string m = "cancelled") { return {StatusCode::Cancelled, std::move(m)}; }

  bool is_ok() const { return code_ == StatusCode::Ok; }
  bool is_cancelled() const { return code_ == StatusCode::Cancelled; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  StatusCode code_ = StatusCode::Ok;
  std::string message_;
};

// A value, or the Status that says why there is none.
template <class T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}
  Result(Status status) : status_(std::move(status)) {}
  bool is_ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() { return *value_; }
  const T& value() const { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace strata
