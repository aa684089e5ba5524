#pragma once

#include <vector>

#include "core/place.hpp"

namespace pe {

/// Who takes part in data-parallel training: this process's places, and where they sit in
/// the world of all processes. Global rank = process rank x local places + local index
/// (every process runs the same number of places). The feed split, the loss scale, the
/// fetch merge and collective membership are all defined on global ranks.
struct rank_model {
  std::vector<place> local_places;
  int process_rank = 0;
  int num_processes = 1;

  int local_size() const { return static_cast<int>(local_places.size()); }
  int world_size() const { return num_processes * local_size(); }
  int global_rank(int local_index) const { return process_rank * local_size() + local_index; }
};

} // namespace pe
