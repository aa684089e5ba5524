#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/allocator.hpp"
#include "core/place.hpp"
#include "core/place_list.hpp"
#include "devices/stream.hpp"
#include "devices/stream_capture.hpp"

namespace pe {

class idle_work;
class tensor;

/// What one place can do: allocate, run work on its streams, make events, copy tensors.
/// Knows nothing of programs or graphs; kernels reach their device through their kernel
/// context. One device per place; several places may share hardware (two CPU places share
/// the host, logical GPU places share a GPU), each with streams of its own.
class device {
 public:
  virtual ~device() = default;

  virtual place where() const = 0;

  /// The kind of place whose kernels run this device's ops: its own, except for a device
  /// that runs another kind's (a GPU place simulated on the host, for tests, runs the CPU
  /// kernels).
  virtual place::kind kernel_kind() const { return where().type; }

  virtual allocator& memory() = 0;
  virtual stream& get_stream(stream_kind kind) = 0;
  virtual std::unique_ptr<event> make_event() = 0;

  /// Enqueues on `on` a copy of `src` (any place) into `dst` (this device's place, or the
  /// host), giving `dst` src's dtype and shape as they are when the copy runs: earlier work
  /// on the stream may still be writing `src`. Both tensors must outlive the copy.
  void copy(stream& on, tensor& dst, const tensor& src) { on.enqueue(copy_work(on, dst, src)); }

  /// What copy() enqueues: the copy's launch code, to run on `on`'s thread, for callers
  /// that run it inside a task of their own there (a traced transfer).
  virtual stream::task copy_work(stream& on, tensor& dst, const tensor& src) = 0;

  /// The launch code that makes `dst` an FP32 tensor of `shape` (on this place) filled with
  /// `value`: the loss gradient's scale. The default copies a host tensor through
  /// copy_work(); a GPU fills on the device (no host buffer for a captured step to read).
  virtual stream::task fill_work(stream& on, tensor& dst, std::vector<std::int64_t> shape, float value);

  /// A capture of this device's streams for replay (stream_capture), or null where the
  /// device cannot capture (CPU places, GPU places simulated on the host).
  virtual std::unique_ptr<stream_capture> make_capture() { return nullptr; }

  /// Binds the host thread that runs this place's work to CPU `cpu` (an operating-system
  /// CPU number): a CPU place's device thread. False where the device has no such thread
  /// (a GPU place: its streams' threads only launch) or the system refused.
  virtual bool pin_host_thread(int cpu) { (void)cpu; return false; }

  /// Lets this place's own thread run pieces of `work` whenever it has nothing else to run
  /// (idle_work), until every piece is taken or withdraw_idle_work(). False where the
  /// device has no thread of its own that could (a GPU place: its threads launch).
  virtual bool offer_idle_work(std::shared_ptr<idle_work> work) { (void)work; return false; }
  /// Takes back what offer_idle_work gave: the thread takes no more of its pieces (one it
  /// is running, it finishes).
  virtual void withdraw_idle_work() {}

  /// Stops every stream: queued work is dropped and blocked waits return, so that nothing
  /// outlives the device. Idempotent; the destructor calls it.
  virtual void stop() = 0;
};

/// Makes the device of a place kind. Each device implementation registers one factory
/// under its kind (core/device_kind.hpp); devices/device.cpp lists the built-in ones, one
/// line each. Registering a kind again replaces its factory (tests simulate GPU places so).
using device_factory = std::function<std::unique_ptr<device>(place)>;
void register_device(place::kind kind, device_factory factory);

/// Counts what this process has of a kind's numbered devices (place_form::devices), asked
/// only when a place list of that kind is read.
using device_inventory_fn = std::function<device_inventory()>;
void register_device_inventory(place::kind kind, device_inventory_fn inventory);

/// The devices of `kind` this process has, for checking a place list (core/place_list.hpp);
/// a kind with no inventory registered has none, and says so.
device_inventory device_inventory_of(place::kind kind);

/// The device for `p`; throws pe::error naming the place when its kind has no device in
/// this build.
std::unique_ptr<device> open_device(place p);

/// Every stream of the given devices synchronized; false when any failed.
bool synchronize_all(const std::vector<device*>& devices);

} // namespace pe
