#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <memory>

#include "devices/device.hpp"
#include "devices/queued_stream.hpp"

namespace pe::testing {

/// A GPU place simulated on the host, so that the executor's GPU paths run where there is no
/// GPU: the startup program staged on the host and copied in, feeds going over on the copy
/// stream with the compute stream waiting on an event, the loss-gradient scale and fetches
/// as device copies (step_node::transfer_work), host_value(), and device-timed trace spans.
///
/// Its streams are queued_streams, the GPU places' host side, over a backend whose launch
/// code runs the CPU kernels (kernel_kind() is cpu) on host memory. By default the "device"
/// has finished the work when the launch code returns: markers are complete when recorded,
/// and timed markers carry the host's steady time then. With set_simulated_device_lag, the
/// device reports the work finished only a while after its launch, as a GPU does, so that
/// tests see whether the host waits for it (simulated_devices_idle). What it cannot show is
/// what only a GPU does: data still being written after the launch, device memory, the CUDA
/// calls.
class host_gpu_device final : public device {
 public:
  /// `where` must be a GPU place.
  explicit host_gpu_device(place where);
  ~host_gpu_device() override;

  place where() const override { return place_; }
  place::kind kernel_kind() const override { return place::kind::cpu; }
  allocator& memory() override;
  stream& get_stream(stream_kind kind) override;
  std::unique_ptr<event> make_event() override;
  stream::task copy_work(stream& on, tensor& dst, const tensor& src) override;
  /// Null, unless set_simulated_capture_refused(true): then a capture that fails at its
  /// start, as a GPU's does when the driver refuses it (see there).
  std::unique_ptr<stream_capture> make_capture() override;
  void stop() override;

  /// How many spans of timed work the streams read from the simulated device clock, over
  /// every host_gpu_device of the process.
  static int spans_read();

  /// How many markers the streams recorded (records of events, drains; not the timed
  /// markers of traced work), over every host_gpu_device of the process.
  static int markers_recorded();

 private:
  place place_;
  std::array<std::unique_ptr<queued_stream>, 3> streams_; // by stream_kind
};

/// Makes every simulated device report work finished `lag` after its launch (and after
/// what its stream waited for); 0, the default: at once. The work itself still runs at
/// launch, so results are unchanged.
void set_simulated_device_lag(std::chrono::nanoseconds lag);

/// Whether the simulated devices have finished (by their lag) all work recorded so far.
bool simulated_devices_idle();

/// With true, the simulated devices offer CUDA-graph capture (execution_strategy::cuda_graphs
/// is accepted) that the "driver" refuses at the capture's start: the origin stream fails
/// there, so none of the step's work that depends on it runs, as none of a refused capture's
/// does on a GPU. The executor's path for a capture that fails (graphs off, the step rerun
/// eagerly) runs so on the host. A capture that succeeds cannot be simulated: the simulated
/// device runs each kernel when it is launched.
void set_simulated_capture_refused(bool refused);

/// Makes GPU places of this process open as host_gpu_devices (register_device), and
/// several of them exchange through the GPU collectives' meeting (collective_rendezvous, as
/// NCCL and the shared-GPU reduction use it) with sums on the host in rank order
/// (register_communicator).
void simulate_gpu_places();

/// The same for the places of `kind` (any kind on numbered devices): how a test adds a device
/// kind by registration alone (tests/device_kind_test.cpp).
void simulate_places_of(place::kind kind);

} // namespace pe::testing
