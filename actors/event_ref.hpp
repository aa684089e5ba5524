#pragma once

namespace pe {

class event;
class stream;

/// What a var-ready message carries besides the step: the event recorded after the
/// writer's work, the stream it was recorded on (a reader on that same stream needs no
/// wait: stream order suffices), and the place of the variable version. Null for a
/// launch-order edge. A local-only message type: it holds pointers.
struct event_ref {
  const event* done = nullptr;
  const stream* on = nullptr;
  int place = 0;
};

} // namespace pe
