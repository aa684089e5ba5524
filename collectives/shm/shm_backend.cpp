#include "collectives/shm/shm_backend.hpp"

#include "collectives/net/net_communicator.hpp"
#include "collectives/shm/shm_communicator.hpp"
#include "collectives/shm/shm_exchange.hpp"
#include "collectives/shm/shm_segment.hpp"
#include "core/error.hpp"

namespace pe {

std::unique_ptr<communicator> try_shm_communicator(const process_backend_context& c, std::string& why_not,
                                                   std::size_t slot_bytes) {
  shm_joined joined = shm_segment::try_join(c.group, slot_bytes);
  if (!joined.segment) {
    why_not = joined.failure;
    return nullptr;
  }
  auto segment = std::make_shared<shm_segment>(std::move(*joined.segment));
  // Every process gets here at the same point of its exchanges (making its communicator):
  // from the next exchange on, all of them try the segment first.
  c.group.use_exchange_path(std::make_shared<shm_exchange>(c.group, segment));
  return std::make_unique<shm_communicator>(c.group, std::move(segment), c.local_ranks,
                                            std::make_unique<net_communicator>(c.transport, c.channel, 1));
}

process_backend shm_backend() {
  return {"shm",
          "shared memory between the processes, which must all run on one host: no socket for "
          "the dense tensors nor for each step's fetches (sparse gradients go over CAF)",
          [](const process_backend_context& c) -> std::unique_ptr<communicator> {
            std::string why_not;
            auto made = try_shm_communicator(c, why_not);
            if (!made) throw error("shm: " + why_not);
            return made;
          },
          true};
}

} // namespace pe
