#pragma once

#include <mutex>
#include <utility>
#include <vector>

namespace pe {

/// The entries of one extension point by name (collective backends, data formats): the
/// built-in ones first, in the order given, then those registered later; registering a name
/// again replaces its entry. Thread-safe. `Entry` has a `name` member.
template <class Entry>
class named_registry {
 public:
  explicit named_registry(std::vector<Entry> builtins) : entries_(std::move(builtins)) {}

  void add(Entry entry) {
    std::lock_guard<std::mutex> guard(mutex_);
    for (auto& e : entries_)
      if (e.name == entry.name) {
        e = std::move(entry);
        return;
      }
    entries_.push_back(std::move(entry));
  }

  /// A copy: entries may be registered while a caller reads them.
  std::vector<Entry> entries() const {
    std::lock_guard<std::mutex> guard(mutex_);
    return entries_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<Entry> entries_;
};

} // namespace pe
