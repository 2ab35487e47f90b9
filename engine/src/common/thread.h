#pragma once
// The engine's threads start through start_thread so that state created lazily on first use exists before they do.
#include <spdlog/spdlog.h>

#include <thread>
#include <utility>

namespace rdx {

// spdlog's registry is a function-local static inside libspdlog.so, which is not built with TSan: when the first log
// call happens on a new thread, TSan cannot see the static's guard and reports the next log call elsewhere as a race.
// Constructing it here, before the thread exists, orders it by thread creation (it is a no-op afterwards).
template <class F>
std::thread start_thread(F&& f) {
  spdlog::default_logger_raw();
  return std::thread(std::forward<F>(f));
}

}  // namespace rdx
