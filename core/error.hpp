#pragma once

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace pe {

/// What a failure is, as a type rather than a message prefix (in the style of CAF's error
/// codes): whoever reports a step's failure tells its cause from its consequences by kind,
/// and the messages stay free to say what happened.
enum class error_kind : std::uint8_t {
  /// A failure of its own: a kernel or launch threw, a device or a collective failed.
  ordinary,
  /// The consequence of another work's failure: work that waited on failed work, or whose
  /// input's writer failed. Never the first thing to report when a cause is known.
  consequence,
};

/// Every error_kind, in declaration order; a new kind is added here too (error_kind_test
/// walks this list, and to_string's switch has no default, so -Wswitch names a kind it lacks).
inline constexpr std::array all_error_kinds{error_kind::ordinary, error_kind::consequence};

/// "ordinary", "consequence".
inline std::string to_string(error_kind kind) {
  switch (kind) {
    case error_kind::ordinary: return "ordinary";
    case error_kind::consequence: return "consequence";
  }
  return "error_kind(" + std::to_string(static_cast<int>(kind)) + ")";
}

/// The one exception type of the engine. Its message names the problem precisely
/// (op, slot, variable, place) because it is what the user reads; its kind says whether it
/// is a failure of its own or the consequence of another (ordinary unless given).
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;

  error(error_kind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}

  error_kind kind() const noexcept { return kind_; }

 private:
  error_kind kind_ = error_kind::ordinary;
};

} // namespace pe
