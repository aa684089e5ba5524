#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "devices/stream.hpp"

namespace pe {

/// Device work captured once from the streams of places that share one device and
/// replayed as a single launch (a CUDA graph): the launch code of a step's kernels runs
/// once, during the capture, and every replay costs one launch however many kernels the
/// step has. What a step whose host launch rate sets its pace (small kernels, several
/// places sharing a GPU) needs.
///
/// The caller orders it on the streams: begin() on an origin stream, then the other
/// streams join by waiting for an event the origin records after it; the work to capture
/// is enqueued; each joined stream records an event the origin waits for, then end() on
/// the origin. While a capture is open no work of the captured streams reaches the device,
/// so nothing on them may be waited for by the host: no synchronize, no event query.
class stream_capture {
 public:
  virtual ~stream_capture() = default;

  /// Enqueues on `origin` (a stream of this capture's device) the start of the capture.
  virtual void begin(stream& origin) = 0;

  /// Enqueues on `joiner` (a stream that joined the capture) a marker after its captured
  /// work, and on `origin` a wait for it: a capture ends only once every stream that joined
  /// it has rejoined the origin. Both run even on a failed stream (a failed step's capture
  /// must still end on every stream); `origin` waits at most 10 s for the marker.
  virtual void rejoin(stream& joiner, stream& origin) = 0;

  /// Enqueues on `origin` the end of the capture and the making of its replayable form.
  /// Runs even when the origin has failed (a failed capture must still be ended); never
  /// fails the stream: failure() says what went wrong.
  virtual void end(stream& origin) = 0;

  /// Enqueues on `joiner` a wait (on its host thread, even when it has failed) until end()
  /// has run: until then anything `joiner` records or launches would go into the capture,
  /// and the host must not wait for it. At most 30 s.
  virtual void await_end(stream& joiner) = 0;

  /// Enqueues one replay of the captured work on `origin`.
  virtual void replay(stream& origin) = 0;

  /// After end() ran: why the capture could not be made (an op's launch code waited on the
  /// device, the driver refused a call while capturing), or none when it is ready.
  virtual std::optional<std::string> failure() const = 0;

  /// After end() ran: the number of device operations captured (kernels, copies, ...).
  virtual std::size_t operations() const = 0;
};

} // namespace pe
