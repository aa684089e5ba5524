#pragma once

// Values for the collective tests: random buffers per rank, copies, comparisons, and the
// same collective run in one process as the reference.

#include <vector>

#include "collectives/communicator.hpp"
#include "core/tensor.hpp"

namespace pe::testing {

/// values[rank][variable]: random in [-1, 1], with sizes that cut packets and blocks
/// unevenly (1, 1000 and 1100003 floats).
std::vector<std::vector<tensor>> random_buffers(int ranks, unsigned seed);

std::vector<tensor*> pointers(std::vector<tensor>& ts);

std::vector<std::vector<tensor>> clone_all(const std::vector<std::vector<tensor>>& in);

bool bit_identical(const tensor& a, const tensor& b);

/// The largest difference of a from b, relative to max(1, |b|).
double relative_difference(const tensor& a, const tensor& b);

/// Global rank r's sparse gradient (SELECTED_ROWS): 1 + r % 3 rows of width 2 in a table
/// of 10 rows, values 10 r + k + j / 10.
tensor rank_rows(int r);

/// `c` over in.size() CPU places of one process (inproc_communicator): the reference.
std::vector<std::vector<tensor>> single_process(const collective_call& c, std::vector<std::vector<tensor>> in);

} // namespace pe::testing
