#pragma once
// C++20 coroutines for workers: many operations in flight per thread, each written as straight-line code.
//   Task<T>   lazy coroutine, started by co_await (symmetric transfer back to the awaiter on completion)
//   spawn()   runs a Task<void> detached; its frame is freed when it finishes
//   Scheduler per-worker ready queue: awaitables (RPC responses, one-sided completions, yield) resume here
// Coroutine bodies must not throw: an escaping exception terminates (exceptions never cross into the worker loop).
#include <chrono>
#include <coroutine>
#include <cstdlib>
#include <deque>
#include <exception>
#include <optional>
#include <queue>
#include <utility>
#include <vector>

namespace rdx::rpc {

template <typename T>
class Task;

namespace detail {
struct FinalAwaiter {
  bool await_ready() const noexcept { return false; }
  template <typename P>
  std::coroutine_handle<> await_suspend(std::coroutine_handle<P> h) noexcept {
    auto c = h.promise().continuation;
    return c ? c : std::noop_coroutine();
  }
  void await_resume() const noexcept {}
};
struct PromiseBase {
  std::coroutine_handle<> continuation;
  std::suspend_always initial_suspend() noexcept { return {}; }
  FinalAwaiter final_suspend() noexcept { return {}; }
  [[noreturn]] void unhandled_exception() noexcept { std::terminate(); }
};
}  // namespace detail

template <typename T>
class [[nodiscard]] Task {
 public:
  struct promise_type : detail::PromiseBase {
    std::optional<T> value;
    Task get_return_object() { return Task(std::coroutine_handle<promise_type>::from_promise(*this)); }
    template <typename U>
    void return_value(U&& v) {
      value.emplace(std::forward<U>(v));
    }
  };
  Task(Task&& o) noexcept : h_(std::exchange(o.h_, {})) {}
  Task& operator=(Task&&) = delete;
  ~Task() {
    if (h_) h_.destroy();
  }
  bool await_ready() const noexcept { return false; }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> awaiting) noexcept {
    h_.promise().continuation = awaiting;
    return h_;
  }
  T await_resume() { return std::move(*h_.promise().value); }

 private:
  explicit Task(std::coroutine_handle<promise_type> h) : h_(h) {}
  std::coroutine_handle<promise_type> h_;
};

template <>
class [[nodiscard]] Task<void> {
 public:
  struct promise_type : detail::PromiseBase {
    Task get_return_object() { return Task(std::coroutine_handle<promise_type>::from_promise(*this)); }
    void return_void() {}
  };
  Task(Task&& o) noexcept : h_(std::exchange(o.h_, {})) {}
  Task& operator=(Task&&) = delete;
  ~Task() {
    if (h_) h_.destroy();
  }
  bool await_ready() const noexcept { return false; }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> awaiting) noexcept {
    h_.promise().continuation = awaiting;
    return h_;
  }
  void await_resume() {}

 private:
  explicit Task(std::coroutine_handle<promise_type> h) : h_(h) {}
  std::coroutine_handle<promise_type> h_;
};

namespace detail {
// Owns a Task<void> and frees itself when done.
struct Detached {
  struct promise_type {
    Detached get_return_object() { return {}; }
    std::suspend_never initial_suspend() noexcept { return {}; }
    std::suspend_never final_suspend() noexcept { return {}; }
    void return_void() {}
    [[noreturn]] void unhandled_exception() noexcept { std::terminate(); }
  };
};
inline Detached run_detached(Task<void> t) { co_await std::move(t); }
}  // namespace detail

// Starts `t` now (it runs until its first suspension) and lets it finish on its own.
inline void spawn(Task<void> t) { detail::run_detached(std::move(t)); }

// co_await when_all(std::move(tasks)): runs every task concurrently (each until its first suspension, in order) and
// resumes the caller when all have finished, with their results in order.
template <typename T>
class WhenAll {
 public:
  explicit WhenAll(std::vector<Task<T>> tasks) : tasks_(std::move(tasks)), results_(tasks_.size()) {}
  bool await_ready() const noexcept { return tasks_.empty(); }
  bool await_suspend(std::coroutine_handle<> h) {
    parent_ = h;
    remaining_ = tasks_.size() + 1;  // +1 until every child has started, so none resumes us too early
    for (size_t i = 0; i < tasks_.size(); ++i) run_child(this, i);
    return --remaining_ != 0;  // all finished synchronously: do not suspend
  }
  std::vector<T> await_resume() {
    std::vector<T> out;
    out.reserve(results_.size());
    for (auto& r : results_) out.push_back(std::move(*r));
    return out;
  }

 private:
  static detail::Detached run_child(WhenAll* self, size_t i) {
    self->results_[i].emplace(co_await std::move(self->tasks_[i]));
    if (--self->remaining_ == 0) self->parent_.resume();
  }
  std::vector<Task<T>> tasks_;
  std::vector<std::optional<T>> results_;
  std::coroutine_handle<> parent_;
  size_t remaining_ = 0;
};

template <typename T>
WhenAll<T> when_all(std::vector<Task<T>> tasks) {
  return WhenAll<T>(std::move(tasks));
}

// Per-worker queue of coroutines ready to continue, plus timers.
class Scheduler {
 public:
  using Clock = std::chrono::steady_clock;

  void ready(std::coroutine_handle<> h) { ready_.push_back(h); }
  // Resumes the coroutines that were ready when called and the timers that expired (those made ready meanwhile wait
  // for the next call, so one busy coroutine cannot starve the network). Returns how many ran.
  size_t run_ready() {
    if (!timers_.empty()) {
      auto now = Clock::now();
      while (!timers_.empty() && timers_.top().at <= now) {
        ready_.push_back(timers_.top().h);
        timers_.pop();
      }
    }
    size_t n = ready_.size();
    for (size_t i = 0; i < n; ++i) {
      auto h = ready_.front();
      ready_.pop_front();
      h.resume();
    }
    return n;
  }
  bool idle() const { return ready_.empty(); }
  // When the next timer expires (for a worker deciding how long it may block).
  std::optional<Clock::time_point> next_timer() const {
    if (timers_.empty()) return std::nullopt;
    return timers_.top().at;
  }

  // co_await scheduler.yield(): continue after everything else that is ready (and after the next network poll).
  auto yield() {
    struct Awaiter {
      Scheduler* s;
      bool await_ready() const noexcept { return false; }
      void await_suspend(std::coroutine_handle<> h) { s->ready(h); }
      void await_resume() const noexcept {}
    };
    return Awaiter{this};
  }
  // co_await scheduler.sleep_for(d): continue once `d` has passed (the worker keeps running meanwhile).
  auto sleep_for(Clock::duration d) {
    struct Awaiter {
      Scheduler* s;
      Clock::time_point at;
      bool await_ready() const noexcept { return false; }
      void await_suspend(std::coroutine_handle<> h) { s->timers_.push(Timer{at, h}); }
      void await_resume() const noexcept {}
    };
    return Awaiter{this, Clock::now() + d};
  }

 private:
  struct Timer {
    Clock::time_point at;
    std::coroutine_handle<> h;
    bool operator>(const Timer& o) const { return at > o.at; }
  };
  std::deque<std::coroutine_handle<>> ready_;
  std::priority_queue<Timer, std::vector<Timer>, std::greater<Timer>> timers_;
};

}  // namespace rdx::rpc
