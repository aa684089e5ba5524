#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/allocator.hpp"
#include "devices/device.hpp"
#include "devices/stream_capture.hpp"
#include "graph/exec/scope.hpp"

namespace pe {

struct step_inputs;

/// CUDA-graph steps of one executor (execution_strategy::cuda_graphs): per step, whether
/// the op actors launch every kernel (eager), a step is captured as it runs (its launches
/// go into one graph of the places' streams), or the captured step is replayed with one
/// launch and no op actor firing.
///
/// Why: on a GPU the host's launch rate sets the pace of small kernels, and places that
/// share a GPU launch twice as often through one driver (two host threads launch at
/// 1.2-1.7x one thread's rate, bench/cuda_launch_threads). A replay costs one launch per
/// step whatever the number of kernels, places and events.
///
/// What a replay assumes, and how it is made sure of:
/// - the same work: a step is captured only after two eager steps of the same signature
///   (feed shapes, rows per place, fetch list, graph), and replayed only for that signature;
///   launch code that needs the host mid-step (a value read back, host-drawn random numbers)
///   refuses to be captured (kernels/cuda/cuda_context), and a failed capture turns graphs
///   off for the executor, its step rerun eagerly;
/// - the same memory: every block a captured launch was given keeps its address and is
///   used by nothing else (allocator::hold_frees() for the temporaries; the variables'
///   buffers are checked before each replay, and a moved one drops the graph);
/// - host values outside it: feeds are copied in before the replay, fetches copied out
///   after it, from the tensors the capture's fetches referenced.
class captured_steps {
 public:
  enum class mode { eager, capture, replay };

  struct counts {
    std::uint64_t captures = 0;  ///< graphs made
    std::uint64_t replays = 0;   ///< steps run as a replay (the capturing step included)
    std::uint64_t dropped = 0;   ///< graphs dropped because a variable's buffer moved
    std::size_t operations = 0;  ///< device operations in the current graph
  };

  /// Null (steps always eager) unless every place is a GPU place of one CUDA device that
  /// can capture; `why_not` then says why, for --cuda-graphs' refusal message.
  static std::unique_ptr<captured_steps> make(const std::vector<device*>& devices, std::string& why_not);

  explicit captured_steps(std::vector<device*> devices);
  ~captured_steps();
  captured_steps(const captured_steps&) = delete;
  captured_steps& operator=(const captured_steps&) = delete;

  /// The next step's mode, before its feeds are enqueued (the previous step has finished
  /// on every stream). `signature` names what the step's launches depend on besides
  /// memory; a traced step runs eagerly (traces time each op).
  mode next(const std::string& signature, bool traced);

  /// Capture step, right after feed `name` of place `place` was enqueued into `var` on that
  /// place's copy stream: notes (on that stream, once the copy's launch code has given `var`
  /// its buffer) the buffer the graph will read the feed from.
  void note_feed(std::size_t place, const std::string& name, tensor& var);

  /// Replay step: where feed `name` of place `place` goes (the buffer note_feed() noted).
  tensor& feed_target(std::size_t place, const std::string& name);

  /// Whether `s` is the stream the graph is launched on.
  bool is_origin(const stream& s) const { return &s == &origin(); }

  /// Capture step, after its feeds were enqueued and before its op actors fire: begins the
  /// capture and makes every stream of every place join it (next() already holds the places'
  /// frees: allocator::hold_frees()).
  void begin_capture();

  /// Capture step, once every op actor fired: every stream rejoins the origin, the
  /// capture ends and is replayed once (this step's own run), and the fetches are copied
  /// out after it from `in.fetch_sources`.
  void end_capture(step_inputs& in);

  /// Capture step, after every stream was synchronized: true when the graph was made (the
  /// variables' buffers are noted for later checks); else false with `why`, graphs are off
  /// from now on and the step must be rerun eagerly (no kernel of it ran).
  bool finish_capture(step_inputs& in, const std::vector<scope*>& scopes, std::string& why);

  /// Replay step, after its feeds were enqueued: waits for every place's feeds
  /// (`feeds_ready`, by place), launches the graph, copies the fetches out into in.fetched.
  void replay(const std::vector<std::unique_ptr<event>>& feeds_ready, step_inputs& in);

  /// A captured or replayed step failed (its work has ended): the graph is dropped (its
  /// memory given back).
  void drop();

  /// A captured or replayed step stalled: its work may still be queued, and that work refers
  /// to the capture, so nothing is dropped; graphs are off from now on.
  void abandon();

  counts statistics() const { return counts_; }

  /// Why graphs were turned off (a capture that failed), or empty.
  const std::string& off_reason() const { return off_reason_; }

 private:
  /// The origin stream: place 0's compute stream.
  stream& origin() const;
  /// Every stream of every place but the origin.
  std::vector<stream*> joiners() const;
  /// After the graph on the origin: each place's copy stream waits, then copies the fetches.
  void copy_fetches_after_graph(const std::vector<std::vector<tensor>>& sources, step_inputs& in);
  /// Whether every variable noted at capture still has the buffer it had.
  bool buffers_unchanged() const;

  struct noted_buffer {
    const tensor* var = nullptr;
    const void* data = nullptr;
  };

  std::vector<device*> devices_;
  std::unique_ptr<stream_capture> capture_;            // the current graph, or null
  std::vector<std::shared_ptr<allocator::hold>> holds_; // by place, with the graph
  std::vector<std::vector<tensor>> sources_;           // [fetch][place]: what replays fetch
  std::vector<std::map<std::string, tensor>> feeds_;   // [place][feed]: where replays feed
  std::vector<noted_buffer> buffers_;                  // variables' buffers at capture
  std::string signature_;                              // of the graph
  std::string last_signature_;                         // of the last eager step
  int same_in_a_row_ = 0;                              // eager steps of last_signature_
  bool off_ = false;                                   // a capture failed: eager from now on
  std::string off_reason_;
  std::unique_ptr<event> join_, after_;
  counts counts_;
};

/// "a,b,c" of `values`, for signatures and messages.
std::string joined_dims(const std::vector<std::int64_t>& values);

} // namespace pe
