#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collectives/communicator.hpp"
#include "collectives/net/process_group.hpp"
#include "core/tensor.hpp"
#include "devices/device.hpp"

namespace pe::bench {

/// A port of 127.0.0.1 that was free a moment ago (bound to port 0, read, closed).
int free_port();

/// What the "processes" of a benchmark job share: how many, which collective backend, and
/// optionally the TLS files every connection presents.
struct job_options {
  int processes = 2;
  std::string backend = "caf";
  tls_files tls; ///< empty: plain TCP
  bool data_links = true; ///< process_group_options::data_links
};

/// N "processes" of one job in this process: each its own process group joined through CAF
/// networking on 127.0.0.1 (its own actor system, sockets and middleman, as a real process
/// has), one CPU place each, and the communicator of `backend` that training would use.
/// What a real process adds beyond this (a separate address space and allocator) is not
/// measured.
class joined_processes {
 public:
  explicit joined_processes(const job_options& options);
  ~joined_processes();
  joined_processes(const joined_processes&) = delete;
  joined_processes& operator=(const joined_processes&) = delete;

  /// All-reduces buffers[r] (process r's) across the processes; returns when every
  /// process's communication stream is done. Throws pe::error when it failed.
  void all_reduce(std::vector<tensor>& buffers);

  int size() const { return static_cast<int>(groups_.size()); }

 private:
  std::vector<std::unique_ptr<process_group>> groups_;
  std::vector<std::unique_ptr<communicator>> comms_;
  std::vector<std::unique_ptr<device>> devices_;
  std::uint64_t sequence_ = 0;
};

} // namespace pe::bench
