#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "collectives/process_backend.hpp"

namespace pe {

/// A slot per process and round parity: 4 MiB moves the MLPs' whole gradients of a layer in
/// one round, and a 3-process job maps 25 MiB.
inline constexpr std::size_t shm_slot_bytes = std::size_t{4} << 20;

/// The "shm" backend: shm_communicator over a segment shared by the job's processes, which
/// must all run on one host.
process_backend shm_backend();

/// The shm backend's communicator, or nullptr on every process when some process could not
/// map the segment (`why_not` then says which and why, the same on every process): what the
/// "auto" backend tries first. Every process calls it at the same point of its exchanges.
/// `slot_bytes`: each process's data slot per round parity (tests make it small).
std::unique_ptr<communicator> try_shm_communicator(const process_backend_context& c, std::string& why_not,
                                                   std::size_t slot_bytes = shm_slot_bytes);

} // namespace pe
