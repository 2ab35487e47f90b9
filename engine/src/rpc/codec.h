#pragma once
// Bounds-checked encoding of message payloads. A Reader never reads past its span; any short or malformed field
// puts it in the failed state and every later read returns zero values, so handlers check ok() once at the end.
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

namespace rdx::rpc {

class Writer {
 public:
  template <typename T>
  requires std::is_trivially_copyable_v<T> Writer& put(const T& v) {
    out_.append(reinterpret_cast<const char*>(&v), sizeof(T));
    return *this;
  }
  // Length-prefixed (u32) bytes.
  Writer& bytes(std::string_view s) {
    put(static_cast<uint32_t>(s.size()));
    out_.append(s);
    return *this;
  }
  const std::string& data() const { return out_; }
  std::span<const std::byte> span() const { return {reinterpret_cast<const std::byte*>(out_.data()), out_.size()}; }
  void clear() { out_.clear(); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::span<const std::byte> in) : p_(in.data()), left_(in.size()) {}
  explicit Reader(std::string_view in) : p_(reinterpret_cast<const std::byte*>(in.data())), left_(in.size()) {}

  template <typename T>
  requires std::is_trivially_copyable_v<T> T get() {
    T v{};
    if (!ok_ || left_ < sizeof(T)) {
      ok_ = false;
      return v;
    }
    std::memcpy(&v, p_, sizeof(T));
    p_ += sizeof(T);
    left_ -= sizeof(T);
    return v;
  }
  // Length-prefixed bytes; fails if the declared length exceeds what is left or `max`.
  std::string_view bytes(size_t max = SIZE_MAX) {
    auto n = get<uint32_t>();
    if (!ok_ || n > left_ || n > max) {
      ok_ = false;
      return {};
    }
    std::string_view s(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    left_ -= n;
    return s;
  }
  bool ok() const { return ok_; }
  // What is left to read (a part another reader decodes).
  std::span<const std::byte> rest() const {
    return ok_ ? std::span<const std::byte>(p_, left_) : std::span<const std::byte>();
  }
  // True if everything was consumed without error (trailing bytes are a malformed message).
  bool done() const { return ok_ && left_ == 0; }

 private:
  const std::byte* p_;
  size_t left_;
  bool ok_ = true;
};

}  // namespace rdx::rpc
