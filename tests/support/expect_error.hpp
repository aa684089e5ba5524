#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace pe::testing {

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
