#pragma once

#include <vector>

namespace pe {

class process_group;

/// A new NCCL unique id (ncclGetUniqueId), as the bytes that travel to the other processes.
/// Needs the NCCL library, not a GPU. Throws pe::error with NCCL's message when it fails.
std::vector<char> make_nccl_id();

/// Rank 0's NCCL id on every process of `group` (a host broadcast over CAF networking):
/// every process calls it in the same order. Throws pe::error naming rank 0 when what
/// arrives is not an id (another size).
std::vector<char> share_nccl_id(process_group& group);

} // namespace pe
