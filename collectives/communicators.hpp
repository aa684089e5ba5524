#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "collectives/communicator.hpp"
#include "devices/device.hpp"

namespace pe {

class process_group;

/// The communicator for this process's places (all of one kind), joined with the other
/// processes of `group` when it is not null: the in-process CPU communicator or the
/// cross-process one over CAF for CPU places; for GPU places (CUDA build) NCCL, or the
/// engine's own reduction when places share a GPU. Throws pe::error naming what this build
/// or these places lack.
std::unique_ptr<communicator> make_communicator(const std::vector<device*>& devices, process_group* group);

/// Makes the communicator of several places of one kind (or of places in several processes).
using communicator_factory =
    std::function<std::unique_ptr<communicator>(const std::vector<device*>& devices, process_group* group)>;

/// Makes make_communicator use `factory` for places of `kind` (the built-in ones are
/// registered at first use; a test's simulated places register their own).
void register_communicator(place::kind kind, communicator_factory factory);

} // namespace pe
