#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collectives/cpu/inproc_communicator.hpp"
#include "devices/device.hpp"

namespace pe::testing {

/// N CPU places and the in-process communicator between them: for tests that launch
/// collectives by hand on the places' communication streams.
struct inproc_world {
  /// How long anything that should finish gets before a test calls it a hang.
  static constexpr std::chrono::milliseconds limit{10000};

  explicit inproc_world(int n) : comm(n) {
    for (int r = 0; r < n; ++r) devices.push_back(open_device(place::cpu(r)));
  }
  ~inproc_world() { comm.abort(); } // releases a rank still waiting when a test failed

  stream& on(int rank) { return devices[static_cast<std::size_t>(rank)]->get_stream(stream_kind::communication); }

  /// Rank r's stream: false when its work failed, nullopt when it is still running after `within`.
  std::optional<bool> finished(int rank, std::chrono::milliseconds within = limit) {
    return on(rank).synchronize_for(within);
  }
  std::string error(int rank) { return on(rank).error().value_or("<no error>"); }

  inproc_communicator comm;
  std::vector<std::unique_ptr<device>> devices; // after comm: destroyed first
};

} // namespace pe::testing
