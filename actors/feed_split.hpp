#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/exec/feed_check.hpp"
#include "graph/ssa_graph.hpp"

namespace pe {

/// How a global batch is shared among the global ranks, and how fetched values come back.
/// All of it is defined on global ranks (see rank_model), so it holds unchanged when the
/// ranks live in several processes.

/// The common dim-0 size of the feeds. Throws pe::error for a scalar feed, feeds that
/// disagree, or an empty batch. 0 when there are no feeds.
std::int64_t batch_size(const feed_map& feeds);

/// Rows per global rank: `batch` split as evenly as possible, the first batch % world
/// ranks one more; a rank may get none.
std::vector<std::int64_t> split_rows(std::int64_t batch, int world_size);

/// The loss gradient each rank seeds: its share rows_r / batch (coeff_num_device), so the
/// summed update is the global-batch mean's also for uneven splits; 1 (one); nothing
/// (customized: the user feeds it).
std::vector<float> loss_scales(const std::vector<std::int64_t>& rows, build_strategy::gradient_scale scale);

/// One fetched variable's per-rank values merged into the global-batch value:
/// - a one-element FP32 variable whose declared dims have no batch dimension (-1) (a mean
///   loss, an accuracy) becomes sum_r (rows_r / batch) * value_r over ranks with rows;
/// - anything else is concatenated along dim 0 in rank order.
tensor merge_fetch(const std::vector<tensor>& values, const std::string& name,
                   const shape_t& declared_dims, const std::vector<std::int64_t>& rows);

} // namespace pe
