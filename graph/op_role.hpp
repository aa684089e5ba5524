#pragma once

#include <cstdint>

#include "graph/proto.hpp"

namespace pe {

/// Paddle's op_role attribute values (bit flags), which tell the graph builder what an op
/// is for: the loss-gradient seed is Backward|Loss, optimizer ops are Optimize.
namespace op_role {
constexpr std::int32_t forward = 0x0;
constexpr std::int32_t backward = 0x1;
constexpr std::int32_t optimize = 0x2;
constexpr std::int32_t rpc = 0x4;
constexpr std::int32_t dist = 0x8;
constexpr std::int32_t lr_sched = 0x10;
constexpr std::int32_t loss = 0x100;
} // namespace op_role

/// The op_role attribute of `op` (forward when absent).
std::int32_t role_of(const proto::OpDesc& op);

} // namespace pe
