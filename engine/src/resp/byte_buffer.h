#pragma once
// A growable byte buffer with a consumed prefix: the connection reads into its tail, the parser consumes from its
// head. Unlike std::string it never zero-fills the space handed to read(2). Views into the unconsumed bytes stay
// valid until the next reserve_tail() or compact() (the connection only calls those when no command is executing).
#include <cstddef>
#include <cstring>
#include <memory>
#include <string_view>

namespace rdx::resp {

class ByteBuffer {
 public:
  std::string_view unconsumed() const { return {data_.get() + head_, size_ - head_}; }
  size_t unconsumed_size() const { return size_ - head_; }
  bool empty() const { return head_ == size_; }
  size_t capacity() const { return capacity_; }

  void consume(size_t n) {
    head_ += n;
    if (head_ == size_) head_ = size_ = 0;  // everything consumed: start over at the front, no copy
  }

  // Makes at least `min_free` bytes writable after the data (compacting or growing) and returns them.
  char* reserve_tail(size_t min_free) {
    if (capacity_ - size_ >= min_free) return data_.get() + size_;
    compact();
    if (capacity_ - size_ < min_free) grow(size_ + min_free);
    return data_.get() + size_;
  }
  size_t tail_free() const { return capacity_ - size_; }
  void commit(size_t n) { size_ += n; }

  void compact() {
    if (head_ == 0) return;
    std::memmove(data_.get(), data_.get() + head_, size_ - head_);
    size_ -= head_;
    head_ = 0;
  }

  // Frees the storage when the buffer is empty and large (an idle connection keeps no big buffer).
  void shrink_if_idle(size_t keep) {
    if (empty() && capacity_ > keep) {
      data_.reset();
      capacity_ = 0;
    }
  }

 private:
  void grow(size_t need) {
    size_t cap = capacity_ == 0 ? 4096 : capacity_;
    while (cap < need) cap *= 2;
    std::unique_ptr<char[]> bigger(new char[cap]);
    if (size_ > 0) std::memcpy(bigger.get(), data_.get(), size_);
    data_ = std::move(bigger);
    capacity_ = cap;
  }

  std::unique_ptr<char[]> data_;
  size_t head_ = 0, size_ = 0, capacity_ = 0;
};

}  // namespace rdx::resp
