#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace pe::testing {

/// Whether `text` contains `part`: for checking what a message says.
inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// The message of the pe::error `statement` throws ("" when it throws nothing): for tests
/// that check a message in several ways, or that an operation succeeds.
template <class F>
std::string error_of(F&& statement) {
  try {
    statement();
  } catch (const pe::error& e) {
    return e.what();
  }
  return "";
}

/// A message-checking EXPECT_THROW: `statement` throws pe::error containing every part.
template <class F>
void expect_error(F statement, const std::vector<std::string>& parts) {
  try {
    statement();
    ADD_FAILURE() << "no pe::error thrown";
  } catch (const pe::error& e) {
    for (const auto& part : parts)
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
        << "'" << e.what() << "' lacks '" << part << "'";
  }
}

} // namespace pe::testing
