#pragma once

// The flags of pe-actor-run that choose among a few values (--executor, --sync, --reduce,
// --sparse-exchange, --on-stall):
// parsed once into the engine's own enums, spelled from one table per flag for the messages,
// the startup line, the metrics and the job fingerprint, so no file compares option strings.

#include <array>
#include <string>
#include <string_view>
#include <utility>

#include "actors/parallel_executor.hpp"
#include "core/error.hpp"
#include "graph/ssa_graph.hpp"

namespace pe {

/// Which executor trains: the actor executor (parallel_executor) or the reference loop.
enum class executor_choice { actor, reference };

/// The spellings of a choice's values, first the default's; specialised per enum below.
template <class E>
struct choice_spellings;

template <>
struct choice_spellings<executor_choice> {
  static constexpr std::array<std::pair<executor_choice, std::string_view>, 2> table{
      {{executor_choice::actor, "actor"}, {executor_choice::reference, "reference"}}};
};

template <>
struct choice_spellings<sync_mode> {
  static constexpr std::array<std::pair<sync_mode, std::string_view>, 2> table{
      {{sync_mode::event, "event"}, {sync_mode::wait, "wait"}}};
};

template <>
struct choice_spellings<build_strategy::reduce_mode> {
  static constexpr std::array<std::pair<build_strategy::reduce_mode, std::string_view>, 2> table{
      {{build_strategy::reduce_mode::all_reduce, "allreduce"},
       {build_strategy::reduce_mode::reduce, "reduce"}}};
};

template <>
struct choice_spellings<build_strategy::all_reduce_grouping> {
  static constexpr std::array<std::pair<build_strategy::all_reduce_grouping, std::string_view>, 2> table{
      {{build_strategy::all_reduce_grouping::per_layer, "layer"},
       {build_strategy::all_reduce_grouping::per_gradient, "gradient"}}};
};

template <>
struct choice_spellings<sparse_exchange> {
  static constexpr std::array<std::pair<sparse_exchange, std::string_view>, 3> table{
      {{sparse_exchange::automatic, "auto"}, {sparse_exchange::sparse, "sparse"}, {sparse_exchange::dense, "dense"}}};
};

template <>
struct choice_spellings<stall_action> {
  static constexpr std::array<std::pair<stall_action, std::string_view>, 2> table{
      {{stall_action::fail, "fail"}, {stall_action::report, "report"}}};
};

template <>
struct choice_spellings<place_pinning> {
  static constexpr std::array<std::pair<place_pinning, std::string_view>, 3> table{
      {{place_pinning::when_full, "auto"}, {place_pinning::always, "on"}, {place_pinning::never, "off"}}};
};

/// How the flag spells `value` ("actor", "wait", "allreduce", ...).
template <class E>
std::string spelling(E value) {
  for (const auto& [v, text] : choice_spellings<E>::table)
    if (v == value) return std::string(text);
  return "?";
}

/// "actor or reference" ("a, b or c"): every spelling, for messages.
template <class E>
std::string spellings() {
  const auto& table = choice_spellings<E>::table;
  std::string all;
  for (std::size_t i = 0; i < table.size(); ++i)
    all += (i == 0 ? "" : i + 1 == table.size() ? " or " : ", ") + std::string(table[i].second);
  return all;
}

/// The value `text` spells; throws pe::error "`flag`: expected ..., got 'text'" otherwise.
template <class E>
E parse_choice(std::string_view flag, const std::string& text) {
  for (const auto& [v, spelled] : choice_spellings<E>::table)
    if (spelled == text) return v;
  throw error(std::string(flag) + ": expected " + spellings<E>() + ", got '" + text + "'");
}

} // namespace pe
