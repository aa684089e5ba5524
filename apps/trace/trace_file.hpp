#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pe {

/// One op firing as a pe-actor Chrome trace shows it: a span on a place or collective track.
struct trace_span {
  std::string name;  ///< op type: "mul", "relu_grad", "all_reduce"
  std::string cat;   ///< "computation", "collective" or "engine"
  std::string label; ///< "op #3 (mul) on cpu:1", "all_reduce(fc_0.w_0@GRAD)"
  std::uint64_t step = 0;
  std::size_t track = 0; ///< index into trace_file::tracks
  double start_us = 0;
  double end_us = 0;

  double duration_us() const { return end_us - start_us; }
};

/// A message between two firings of one step: the sender's span ends when it is sent and
/// the receiver's span starts once its last input message has arrived.
struct trace_message {
  std::size_t from; ///< index into trace_file::spans
  std::size_t to;
};

/// One traced step: from its first firing's start to its last firing's end.
struct trace_step {
  std::uint64_t step = 0;
  double start_us = 0;
  double end_us = 0;

  double duration_us() const { return end_us - start_us; }
};

/// A Chrome Trace Event file as write_chrome_trace (actors/trace_export.hpp) writes it, in
/// the format actors/trace_format.hpp defines, with the message arrows resolved to the spans
/// they connect.
struct trace_file {
  std::vector<std::string> places;
  std::vector<std::string> tracks;    ///< by track id ("tid"); the "steps" track included
  std::vector<int> track_sort_index;  ///< by track id: lanes of a place together, places in order
  std::vector<trace_span> spans;      ///< by start time
  std::vector<trace_message> messages;
  std::vector<trace_step> steps;      ///< by step number

  /// The traced step numbered `step`; throws pe::error naming the traced steps otherwise.
  const trace_step& step(std::uint64_t step) const;

  /// The tracks that show firings, in display order: every place's first lane and every
  /// other track holding spans (of `step` when given; never the "steps" track).
  std::vector<std::size_t> display_tracks(std::optional<std::uint64_t> step = std::nullopt) const;

  /// Indices of the spans of `step`, by start time.
  std::vector<std::size_t> spans_of(std::uint64_t step) const;
};

/// Reads the trace at `path`. Throws pe::error when the file cannot be read, is not JSON,
/// is not a pe-actor trace (otherData.tool != "pe-actor") or does not have its shape.
trace_file read_trace(const std::string& path);

} // namespace pe
