#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "devices/stream.hpp"

namespace pe {

/// The record of the stream contract (devices/stream_contract.hpp) every stream class
/// keeps: the first failure since the last clear() wins, later ones are dropped, and the
/// position of the failed item (a stream's own count of its work) tells which work came after it. Both
/// stream classes (devices/cpu/cpu_stream, devices/queued_stream) hold one, so error(),
/// error_kind() and clear_error() mean one thing everywhere. Thread-safe; failed() and
/// failed_at_or_before() read one atomic (what the hot path asks before each item).
class first_failure {
 public:
  static constexpr std::uint64_t none = ~std::uint64_t{0};

  /// Records `why` as the failure of the item at `position`, unless a failure is recorded
  /// already. True when this one was recorded.
  bool record(std::uint64_t position, stream::failure why) {
    std::lock_guard<std::mutex> guard(mutex_);
    if (at_.load(std::memory_order_relaxed) != none) return false;
    failure_ = std::move(why);
    at_.store(position, std::memory_order_release);
    return true;
  }

  bool failed() const { return at_.load(std::memory_order_acquire) != none; }

  /// Whether the recorded failure is of an item at or before `position`: that item, and so
  /// everything waiting for it, failed.
  bool failed_at_or_before(std::uint64_t position) const {
    return at_.load(std::memory_order_acquire) <= position;
  }

  /// stream::error(): the recorded message, if any.
  std::optional<std::string> message() const {
    std::lock_guard<std::mutex> guard(mutex_);
    if (!failure_) return std::nullopt;
    return failure_->message;
  }

  /// stream::error_kind(): the recorded failure's kind; ordinary when none.
  pe::error_kind kind() const {
    std::lock_guard<std::mutex> guard(mutex_);
    return failure_ ? failure_->kind : pe::error_kind::ordinary;
  }

  /// stream::clear_error(): forgets the failure.
  void clear() {
    std::lock_guard<std::mutex> guard(mutex_);
    failure_.reset();
    at_.store(none, std::memory_order_release);
  }

 private:
  mutable std::mutex mutex_;
  std::optional<stream::failure> failure_; // guarded by mutex_
  std::atomic<std::uint64_t> at_{none};
};

} // namespace pe
