#pragma once

#include <nlohmann/json.hpp>

#include "actors/trace_format.hpp"
#include "core/error.hpp"

namespace pe {

/// The otherData of a parsed pe-actor trace (actors/trace_format.hpp), the check every
/// reader of pe-actor-trace starts with. Throws pe::error when otherData.tool is not
/// "pe-actor", and nlohmann::json's out_of_range when the document has no otherData.
inline const nlohmann::json& pe_actor_other_data(const nlohmann::json& doc) {
  const nlohmann::json& other = doc.at(trace_format::key::other_data);
  if (!other.is_object() || other.value(trace_format::key::tool, "") != trace_format::tool_name)
    throw error("not a pe-actor trace (otherData.tool is not \"pe-actor\"); write one with "
                "pe-actor-run --trace");
  return other;
}

} // namespace pe
