#pragma once

#include "collectives/process_backend.hpp"

namespace pe {

/// The "shm" backend: shm_communicator over a segment shared by the job's processes, which
/// must all run on one host.
process_backend shm_backend();

} // namespace pe
