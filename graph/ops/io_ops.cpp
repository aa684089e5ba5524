// Schemas of feed and fetch. Both are host ops: the executor moves the tensors itself
// (feed: column `col` of the FEED_MINIBATCH holder into Out; fetch: X into column `col` of
// the FETCH_LIST holder), so they have no kernel.
#include "graph/op_registry.hpp"

#include <cstdint>

namespace pe {

void register_io_ops(op_registry& r) {
  // No shape inference: a fed variable keeps its declared dims, and the holders have none.
  for (const char* type : {"feed", "fetch"})
    r.add({.type = type,
           .inputs = {{"X"}},
           .outputs = {{"Out"}},
           .attrs = {{"col", std::int32_t{0}}},
           .infer_shape = [](shape_context&) {},
           .make_grad = {},
           .host_op = true});
}

} // namespace pe
