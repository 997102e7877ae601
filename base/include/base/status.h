// Status and Result<T>: the error types returned across every library
// boundary of this repository (dedup, parsers, frontier, engine).
//
// A Status is either OK or carries a code plus a human message that names what
// was wrong ("dedup.bin: checksum mismatch in stripe section 3"). Both types
// are plain values: copyable, thread-compatible, no shared state.
#ifndef BASE_STATUS_H_
#define BASE_STATUS_H_

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace crawler {

class [[nodiscard]] Status {
 public:
  enum class Code {
    kOk = 0,
    kInvalidArgument,  // a caller-supplied option or value is out of range
    kNotSupported,     // e.g. erase on a variant that cannot delete
    kIoError,          // open/read/write/fsync/rename failed
    kCorruption,       // checksum mismatch or inconsistent contents
    kTruncated,        // file ends before its declared contents
    kBadMagic,         // not a file of ours at all
    kBadVersion,       // ours, but a format version this build cannot read
    kOutOfRange,       // a value past a configured limit (e.g. URL length)
  };

  Status() = default;
  static Status Ok() { return Status(); }
  static Status Error(Code code, std::string message) {
    assert(code != Code::kOk);
    return Status(code, std::move(message));
  }
  // The common case: the caller's input was wrong (a bad flag, file, key).
  static Status Invalid(std::string message) {
    return Status(Code::kInvalidArgument, std::move(message));
  }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  // "corruption: dedup.bin: ..." — for logs and the CLI.
  std::string ToString() const;

  // Returns a copy whose message is prefixed with `context: `.
  Status WithContext(const std::string& context) const {
    if (ok()) return *this;
    return Status(code_, context + ": " + message_);
  }

 private:
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  Code code_ = Code::kOk;
  std::string message_;
};

const char* StatusCodeName(Status::Code code);

inline std::string Status::ToString() const {
  if (ok()) return "ok";
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

inline const char* StatusCodeName(Status::Code code) {
  switch (code) {
    case Status::Code::kOk:
      return "ok";
    case Status::Code::kInvalidArgument:
      return "invalid argument";
    case Status::Code::kNotSupported:
      return "not supported";
    case Status::Code::kIoError:
      return "I/O error";
    case Status::Code::kCorruption:
      return "corruption";
    case Status::Code::kTruncated:
      return "truncated";
    case Status::Code::kBadMagic:
      return "bad magic";
    case Status::Code::kBadVersion:
      return "bad version";
    case Status::Code::kOutOfRange:
      return "out of range";
  }
  return "unknown";
}

// A value or the Status explaining why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT: implicit by design
    assert(!std::get<Status>(v_).ok());
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  T& operator*() & { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace crawler

#endif  // BASE_STATUS_H_
