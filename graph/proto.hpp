#pragma once

// The generated ProgramDesc classes under a short name.
#include "graph/framework.pb.h"

namespace pe {
namespace proto = paddle::framework::proto;
} // namespace pe
