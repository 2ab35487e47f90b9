#pragma once
// Error values for the engine. Exceptions never cross thread boundaries (and are not used on hot paths); fallible
// functions return Status or Result<T>.
#include <fmt/format.h>

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace rdx {

enum class Code : uint8_t {
  kOk = 0,
  kInvalidArgument,  // bad input from outside: config, network message, client command
  kNotFound,
  kAlreadyExists,
  kUnavailable,  // peer down, not connected, retry elsewhere/later
  kTimeout,
  kBusy,  // transient contention (locked key, full queue): retry
  kAborted,
  kResourceExhausted,  // out of memory / buffers / table full
  kInternal,
  kUnsupported,
};

const char* code_name(Code c);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string msg) : code_(code), msg_(std::move(msg)) {}
  static Status ok() { return {}; }

  bool is_ok() const { return code_ == Code::kOk; }
  explicit operator bool() const { return is_ok(); }
  Code code() const { return code_; }
  const std::string& message() const { return msg_; }
  std::string to_string() const;

 private:
  Code code_ = Code::kOk;
  std::string msg_;
};

template <typename... Args>
Status error(Code code, fmt::format_string<Args...> f, Args&&... args) {
  return Status(code, fmt::format(f, std::forward<Args>(args)...));
}

// Result<T>: a value or a non-ok Status (std::expected is C++23; this is the subset rdx needs).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}                                       // NOLINT(google-explicit-constructor)
  Result(Status s) : v_(std::move(s)) { assert(!std::get<Status>(v_).is_ok()); }  // NOLINT
  bool is_ok() const { return v_.index() == 0; }
  explicit operator bool() const { return is_ok(); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& value() const& { return std::get<0>(v_); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const Status& status() const {
    static const Status kOk;
    return is_ok() ? kOk : std::get<1>(v_);
  }

 private:
  std::variant<T, Status> v_;
};

#define RDX_RETURN_IF_ERROR(expr) \
  do {                            \
    ::rdx::Status _st = (expr);   \
    if (!_st.is_ok()) return _st; \
  } while (0)

}  // namespace rdx
