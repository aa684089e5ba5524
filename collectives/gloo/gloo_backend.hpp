#pragma once

#include "collectives/process_backend.hpp"

namespace pe {

/// "gloo": the CPU places' collectives across processes over Gloo's TCP transport (Debian's
/// libgloo), its connections set up through the job's process group; what
/// process_backends.cpp registers when the build has Gloo.
process_backend gloo_backend();

} // namespace pe
