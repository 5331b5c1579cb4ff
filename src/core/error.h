// Errors are values: the core never throws, prints or aborts. Every failure is an
// Error with a stable code string that all surfaces (CLI, npm, page) report verbatim.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace amn {

enum class ErrorCode : uint8_t {
  parse,             // the bytes do not follow the format
  unsupported,       // valid, but a feature we do not handle (yet)
  limit,             // a ParseLimits bound or built-in floor was hit
  io,                // reading or writing failed (missing file, short read, disk full)
  need_bytes,        // sans-IO: the caller must supply these byte ranges and retry
  need_files,        // sans-IO: the caller must add these files (shards) and retry
  exists,            // refusing to overwrite an existing output
  invalid_argument,  // the caller asked for something that makes no sense
  not_found,         // a named tensor or file is not in the model
  cancelled,         // the caller aborted the operation
  internal,          // a bug: an invariant of our own did not hold
  disallowed_global, // a pickle names a global outside the allowlist (never called)
};

// Stable, lower-case names ("parse", "need_bytes", ...). Never change one.
std::string_view error_code_name(ErrorCode code);

inline constexpr uint64_t kNoOffset = ~uint64_t{0};

// A byte range of one file of a FileSet.
struct ByteRange {
  uint32_t file = 0;
  uint64_t offset = 0;
  uint64_t length = 0;
};

struct Error {
  ErrorCode code = ErrorCode::internal;
  std::string message;
  uint64_t offset = kNoOffset;         // file offset the problem was found at, if any
  std::vector<ByteRange> need_bytes;   // with ErrorCode::need_bytes
  std::vector<std::string> need_files; // with ErrorCode::need_files
};

Error make_error(ErrorCode code, std::string message, uint64_t offset = kNoOffset);

// Result<T> holds a T or an Error. Result<void> is spelled Status.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const& { return std::get<1>(v_); }
  Error&& error() && { return std::get<1>(std::move(v_)); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : err_(std::move(error)), failed_(true) {}
  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const Error& error() const& { return err_; }
  Error&& error() && { return std::move(err_); }

 private:
  Error err_;
  bool failed_ = false;
};
using Status = Result<void>;

}  // namespace amn

// Propagate an error from a Status-returning expression.
#define AMN_TRY(expr)                                  \
  do {                                                 \
    auto amn_try_status_ = (expr);                     \
    if (!amn_try_status_) return std::move(amn_try_status_).error(); \
  } while (0)

#define AMN_CONCAT_INNER_(a, b) a##b
#define AMN_CONCAT_(a, b) AMN_CONCAT_INNER_(a, b)
// AMN_ASSIGN(auto x, f()); declares x from a Result, or returns its error.
#define AMN_ASSIGN(decl, expr) AMN_ASSIGN_IMPL_(AMN_CONCAT_(amn_result_, __LINE__), decl, expr)
#define AMN_ASSIGN_IMPL_(tmp, decl, expr)              \
  auto tmp = (expr);                                   \
  if (!tmp) return std::move(tmp).error();             \
  decl = std::move(tmp).value()
