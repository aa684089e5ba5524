#include "devices/caching_allocator.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>

#include "core/error.hpp"
#include "core/host_profile.hpp"
#include "core/steady_clock.hpp"

namespace pe {

namespace {

constexpr std::size_t small_granule = 512;
constexpr std::size_t large_threshold = std::size_t{1} << 20;
constexpr std::size_t large_granule = std::size_t{2} << 20;

/// When the pending frees are worth a fence: a CUDA fence records an event on every stream
/// of the process (six with two places on a GPU), and fencing each free cost more host time
/// than a small op's launch (measured on an H100). Until a batch has this many blocks or
/// bytes, a miss reserves a new block instead, so batching holds at most a few small
/// blocks more than fencing each free; large blocks are fenced at once, as before.
constexpr std::size_t fence_batch_blocks = 8;
constexpr std::size_t fence_batch_bytes = std::size_t{1} << 20;

std::size_t round_up(std::size_t bytes, std::size_t granule) {
  return (bytes + granule - 1) / granule * granule;
}

} // namespace

struct caching_allocator::state {
  struct block {
    void* ptr = nullptr;
    std::size_t bytes = 0;
  };
  struct batch {
    std::unique_ptr<memory_fence> fence;
    std::vector<block> blocks;
  };

  std::unique_ptr<memory_backend> backend;
  mutable std::mutex mutex;
  std::multimap<std::size_t, void*> cached; // by size: best fit first
  std::vector<block> pending;               // freed since the last fence
  std::size_t pending_bytes = 0;            // their bytes
  std::deque<batch> fenced;                 // behind fences not yet seen done
  /// While a hold is open (hold_frees()): where frees go instead of `pending`.
  std::vector<block>* holding = nullptr;
  stats counts;
  // With host_profiling(): the lock's takings, those that found it taken and how long they
  // waited, and how long allocate() held it (reclaiming, fencing, reserving).
  std::atomic<std::uint64_t> takings{0}, contended{0}, waited_ns{0}, allocate_held_ns{0};

  /// The lock, its waits counted when profiling.
  std::unique_lock<std::mutex> lock() {
    std::unique_lock<std::mutex> l(mutex, std::try_to_lock);
    if (!host_profiling()) {
      if (!l.owns_lock()) l.lock();
      return l;
    }
    takings.fetch_add(1, std::memory_order_relaxed);
    if (!l.owns_lock()) {
      const std::int64_t since = steady_ns();
      l.lock();
      contended.fetch_add(1, std::memory_order_relaxed);
      waited_ns.fetch_add(static_cast<std::uint64_t>(steady_ns() - since), std::memory_order_relaxed);
    }
    return l;
  }

  ~state() {
    // The last buffer is gone: nothing new can be launched on this memory, but launched
    // work may still use freed blocks, so they go back only after a final fence.
    try {
      if (!pending.empty()) put_fence();
      for (batch& b : fenced) b.fence->wait();
      for (batch& b : fenced)
        for (block& k : b.blocks) backend->unreserve(k.ptr, k.bytes);
      for (auto& [bytes, ptr] : cached) backend->unreserve(ptr, bytes);
    } catch (...) {
      // At exit the device may already be gone; its memory goes with it.
    }
    if (host_profiling() && takings.load() > 0)
      std::fprintf(stderr,
                   "allocator profile: lock taken %llu times, found taken %llu times, %.0f us "
                   "waiting; allocate held it %.0f us in %llu reserves\n",
                   static_cast<unsigned long long>(takings.load()),
                   static_cast<unsigned long long>(contended.load()), waited_ns.load() / 1e3,
                   allocate_held_ns.load() / 1e3, static_cast<unsigned long long>(counts.reserves));
  }

  /// Moves the blocks of every batch whose fence is done to the bins. With mutex held.
  void reclaim() {
    for (auto it = fenced.begin(); it != fenced.end();) {
      if (!it->fence->done()) {
        ++it;
        continue;
      }
      for (block& k : it->blocks) cached.emplace(k.bytes, k.ptr);
      counts.fenced_blocks -= it->blocks.size();
      counts.cached_blocks += it->blocks.size();
      it = fenced.erase(it);
    }
  }

  /// Puts the pending frees behind a new fence. With mutex held.
  void put_fence() {
    batch b;
    b.fence = backend->fence();
    b.blocks.swap(pending);
    ++counts.fences;
    counts.fenced_blocks += b.blocks.size();
    counts.pending_blocks = 0;
    pending_bytes = 0;
    fenced.push_back(std::move(b));
  }

  /// Whether the pending frees make a batch (fence_batch_blocks). With mutex held.
  bool batch_ready() const {
    return pending.size() >= fence_batch_blocks || pending_bytes >= fence_batch_bytes;
  }

  /// put_fence, then reclaim: an idle device has passed the new fence at once.
  void fence_and_reclaim() {
    put_fence();
    reclaim();
  }

  /// A cached block of at least `bytes` and at most twice that. With mutex held.
  void* take_cached(std::size_t bytes) {
    auto it = cached.lower_bound(bytes);
    if (it == cached.end() || it->first > 2 * bytes) return nullptr;
    void* p = it->second;
    // The block keeps its own size class: record it for the free.
    taken_size = it->first;
    cached.erase(it);
    --counts.cached_blocks;
    return p;
  }

  /// Out of memory: waits for every fence and gives every cached block back. With mutex held.
  void empty_cache() {
    if (!pending.empty()) put_fence();
    for (batch& b : fenced) b.fence->wait();
    release_cached();
  }

  /// Gives back every cached block and those whose fence is done. With mutex held.
  void release_cached() {
    reclaim();
    for (auto& [bytes, ptr] : cached) {
      backend->unreserve(ptr, bytes);
      counts.reserved_bytes -= bytes;
      ++counts.unreserves;
    }
    counts.cached_blocks = 0;
    cached.clear();
  }

  void free(void* p, std::size_t bytes) {
    const auto guard = lock();
    counts.in_use_bytes -= bytes;
    if (holding != nullptr) {
      holding->push_back({p, bytes});
      return;
    }
    pending.push_back({p, bytes});
    pending_bytes += bytes;
    ++counts.pending_blocks;
  }

  std::size_t taken_size = 0; // set by take_cached, with mutex held
};

std::size_t caching_allocator::round_size(std::size_t bytes) {
  if (bytes == 0) return small_granule;
  return bytes < large_threshold ? round_up(bytes, small_granule) : round_up(bytes, large_granule);
}

caching_allocator::caching_allocator(std::unique_ptr<memory_backend> backend)
    : state_(std::make_shared<state>()) {
  state_->backend = std::move(backend);
}

caching_allocator::~caching_allocator() = default;

std::shared_ptr<std::byte> caching_allocator::allocate(std::size_t bytes) {
  const std::size_t size = round_size(bytes);
  state& s = *state_;
  const auto guard = s.lock();
  const std::int64_t held_since = host_profiling() ? steady_ns() : 0;
  s.reclaim();
  // Fence a batch of frees as soon as the last fence is passed, not only at a miss: a fence
  // put at a miss covers work just launched, is not passed yet on a busy device, and every
  // miss would then reserve more memory. One fence in flight at a time, and only for a
  // batch (fence_batch_blocks), bounds their cost (each records an event on every stream).
  // While a hold is open no fence is put: a capturing stream's event records nothing the
  // device will pass, and the held blocks are not in the batch anyway.
  const bool holding = s.holding != nullptr;
  if (!holding && s.batch_ready() && s.fenced.empty()) s.fence_and_reclaim();
  void* p = s.take_cached(size);
  std::size_t got = s.taken_size;
  if (!holding && p == nullptr && s.batch_ready()) {
    s.fence_and_reclaim();
    p = s.take_cached(size);
    got = s.taken_size;
  }
  if (p == nullptr) {
    got = size;
    p = s.backend->reserve(size);
    if (p == nullptr && holding)
      throw error("device memory exhausted while a step was captured: " + std::to_string(bytes) +
                  " bytes requested, " + std::to_string(s.counts.reserved_bytes) + " bytes held");
    if (p == nullptr) {
      s.empty_cache();
      p = s.backend->reserve(size);
    }
    if (p == nullptr)
      throw error("device memory exhausted: " + std::to_string(bytes) + " bytes requested, " +
                  std::to_string(s.counts.reserved_bytes) + " bytes held by live tensors");
    s.counts.reserved_bytes += size;
    ++s.counts.reserves;
  }
  s.counts.in_use_bytes += got;
  if (held_since != 0)
    s.allocate_held_ns.fetch_add(static_cast<std::uint64_t>(steady_ns() - held_since), std::memory_order_relaxed);
  return std::shared_ptr<std::byte>(static_cast<std::byte*>(p),
                                    [keep = state_, got](std::byte* q) { keep->free(q, got); });
}

/// caching_allocator's hold: collects the frees while open; gives the blocks back (as
/// pending frees, so behind the next fence) when destroyed.
class caching_allocator::block_hold final : public allocator::hold {
 public:
  explicit block_hold(std::shared_ptr<state> s) : state_(std::move(s)) {}
  ~block_hold() override {
    const auto guard = state_->lock();
    if (state_->holding == &blocks_) state_->holding = nullptr;
    for (const state::block& k : blocks_) {
      state_->pending.push_back(k);
      state_->pending_bytes += k.bytes;
      ++state_->counts.pending_blocks;
    }
  }
  void close() override {
    const auto guard = state_->lock();
    if (state_->holding == &blocks_) state_->holding = nullptr;
  }
  std::size_t blocks() const override {
    const auto guard = state_->lock();
    return blocks_.size();
  }

  std::vector<state::block> blocks_; // guarded by the state's mutex

 private:
  std::shared_ptr<state> state_;
};

std::shared_ptr<allocator::hold> caching_allocator::hold_frees() {
  auto h = std::make_shared<block_hold>(state_);
  const auto guard = state_->lock();
  if (state_->holding != nullptr) throw error("caching allocator: a hold is already open");
  state_->holding = &h->blocks_;
  return h;
}

void caching_allocator::release_cached() {
  state& s = *state_;
  std::lock_guard<std::mutex> guard(s.mutex);
  s.release_cached();
}

void caching_allocator::try_release_cached() {
  state& s = *state_;
  std::unique_lock<std::mutex> guard(s.mutex, std::try_to_lock);
  if (guard.owns_lock()) s.release_cached();
}

caching_allocator::stats caching_allocator::statistics() const {
  std::lock_guard<std::mutex> guard(state_->mutex);
  return state_->counts;
}

} // namespace pe
