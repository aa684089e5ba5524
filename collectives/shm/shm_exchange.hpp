#pragma once

#include <cstdint>
#include <memory>

#include "collectives/net/process_group.hpp"
#include "collectives/shm/shm_segment.hpp"

namespace pe {

/// The group's host exchanges (the fetches every training step merges across processes,
/// barriers) through the shm backend's segment: each process writes its bytes into its
/// exchange slot and reads everyone's, in rounds apart from the collectives', so a step's
/// fetch gather costs two memory copies instead of a CAF message round trip through the
/// middleman's threads. A part over a slot (shm_segment::exchange_slot_bytes) sends every
/// process to the CAF path for that exchange.
class shm_exchange final : public host_exchange_path {
 public:
  shm_exchange(process_group& group, std::shared_ptr<shm_segment> segment);

  std::optional<std::vector<byte_buffer>> all_gather(
      const byte_buffer& mine, const std::function<void(int, std::chrono::milliseconds)>& waiting,
      std::chrono::milliseconds every, std::chrono::milliseconds timeout) override;

 private:
  /// Waits until every process's `which` counter reached `at`, as all_gather's contract says.
  void wait_for(std::atomic<std::uint64_t> shm_segment::control::*which, std::uint64_t at,
                const std::function<void(int, std::chrono::milliseconds)>& waiting,
                std::chrono::milliseconds every, std::chrono::milliseconds timeout);

  process_group& group_;
  std::shared_ptr<shm_segment> segment_;
  std::uint64_t round_ = 0; // the next exchange round
};

} // namespace pe
