#pragma once

// A job's NCCL ranks must each have a GPU of their own: NCCL documents one GPU in several
// ranks of a communicator as unsupported and liable to hang. A job of several processes
// meets over the process group, so its processes can compare their GPUs first and refuse a
// shared one with a message naming both ranks (two processes on one machine each given
// gpu:0 is the likely mistake). Plain C++: what the GPUs are is found by the caller (the
// CUDA runtime's PCI bus id), so the check and its exchange are tested without a GPU.

#include <string>
#include <vector>

namespace pe {

class process_group;

/// One of this process's GPU places as the job's other processes see it.
struct gpu_of_place {
  std::string place;   ///< how the user named it: "gpu:0", "gpu:1@dev0"
  std::string machine; ///< which machine's GPU: this_machine() on the process that owns it
  std::string host;    ///< that process's hostname, for messages
  std::string bus_id;  ///< the GPU on that machine: its PCI bus id ("0000:3B:00.0")
};

/// What tells this machine from the job's others: the running kernel's boot id
/// (/proc/sys/kernel/random/boot_id), which containers sharing one machine's GPUs share
/// whatever their hostnames, and two machines never do; the hostname where it cannot be read.
std::string this_machine();

/// This process's hostname ("unnamed host" when it has none).
std::string this_host();

/// Every process's GPU places (an all_gather over `group`: every process calls it, in the
/// same order as its other exchanges), checked. Throws pe::error naming the first two places
/// of the job (process rank and place) that are one GPU on one machine, or the process whose
/// list could not be read.
void refuse_shared_gpus(process_group& group, const std::vector<gpu_of_place>& mine);

} // namespace pe
