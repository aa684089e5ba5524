#include "collectives/shm/shm_backend.hpp"

#include "collectives/shm/shm_communicator.hpp"
#include "collectives/shm/shm_exchange.hpp"
#include "collectives/shm/shm_segment.hpp"

namespace pe {

namespace {

/// A slot per process and round parity: 4 MiB moves the MLPs' whole gradients of a layer in
/// one round, and a 3-process job maps 24 MiB (touched only as far as its collectives reach).
constexpr std::size_t slot_bytes = std::size_t{4} << 20;

} // namespace

process_backend shm_backend() {
  return {"shm",
          "shared memory between the processes, which must all run on one host: no socket for "
          "the tensors nor for each step's fetches (dense gradients only)",
          [](const process_backend_context& c) -> std::unique_ptr<communicator> {
            auto segment = std::make_shared<shm_segment>(shm_segment::join(c.group, slot_bytes));
            // Every process gets here at the same point of its exchanges (making its
            // communicator): from the next exchange on, all of them try the segment first.
            c.group.use_exchange_path(std::make_shared<shm_exchange>(c.group, segment));
            return std::make_unique<shm_communicator>(c.group, std::move(segment), c.local_ranks);
          },
          true};
}

} // namespace pe
