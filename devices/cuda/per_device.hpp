#pragma once

#include <map>
#include <memory>
#include <mutex>

namespace pe {

/// The one `T` of CUDA device `device`, shared by every place on that GPU: made by `make()`
/// on first use and kept while anybody holds it (a later use after all let go makes a fresh
/// one). Per `T`, thread-safe; the registry is never destroyed, since devices may close
/// during exit.
template <class T, class Make>
std::shared_ptr<T> shared_per_device(int device, const Make& make) {
  static auto* mutex = new std::mutex;
  static auto* made = new std::map<int, std::weak_ptr<T>>;
  std::lock_guard<std::mutex> guard(*mutex);
  std::weak_ptr<T>& slot = (*made)[device];
  if (std::shared_ptr<T> existing = slot.lock()) return existing;
  std::shared_ptr<T> fresh = make();
  slot = fresh;
  return fresh;
}

} // namespace pe
