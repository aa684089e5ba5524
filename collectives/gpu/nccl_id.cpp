#include "collectives/gpu/nccl_id.hpp"

#include <cstring>

#include <nccl.h>

#include "collectives/net/process_group.hpp"
#include "core/error.hpp"

namespace pe {

std::vector<char> make_nccl_id() {
  ncclUniqueId id;
  if (const ncclResult_t r = ncclGetUniqueId(&id); r != ncclSuccess)
    throw error(std::string("ncclGetUniqueId failed: ") + ncclGetErrorString(r));
  std::vector<char> bytes(sizeof id.internal);
  std::memcpy(bytes.data(), id.internal, bytes.size());
  return bytes;
}

std::vector<char> share_nccl_id(process_group& group) {
  byte_buffer mine;
  if (group.rank() == 0) {
    const std::vector<char> made = make_nccl_id();
    mine.assign(made.begin(), made.end());
  }
  const byte_buffer sent = group.broadcast(mine, 0);
  std::vector<char> id(sent.begin(), sent.end());
  if (id.size() != NCCL_UNIQUE_ID_BYTES)
    throw error("process rank 0 sent an NCCL id of " + std::to_string(id.size()) + " bytes, not " +
                std::to_string(NCCL_UNIQUE_ID_BYTES));
  return id;
}

} // namespace pe
