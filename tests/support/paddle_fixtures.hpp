#pragma once

#include <string>

namespace pe::testing {

/// The path of `name` in tests/data/paddle_params: programs and parameter files Paddle 2.6
/// wrote (scripts/make_paddle_fixture.py). Every test executable defines PE_TEST_DATA_DIR.
inline std::string paddle_fixture(const std::string& name) {
  return std::string(PE_TEST_DATA_DIR) + "/paddle_params/" + name;
}

} // namespace pe::testing
