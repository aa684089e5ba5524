#pragma once

#include <compare>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pe {

/// How the places of a kind are written in a place list (--places, Python's places).
enum class place_form {
  replicas, ///< KIND:N: N places sharing the host's memory (cpu:2)
  devices,  ///< KIND:all, KIND:N[,M...], KIND:NxK: places on numbered hardware devices (gpu:0x2)
};

/// A kind of place, known by its name: "cpu" and "gpu" are built in; a new device kind
/// defines its name once (device_kind::define, from its folder's registration) and every
/// registry keyed by kind (devices, kernels, communicators) and the place-list parser take it
/// from there, with no enum to extend. A small value: an index into the table of names, so
/// comparing, copying and keying maps by it cost what an enum's would.
class device_kind {
 public:
  static const device_kind cpu;
  static const device_kind gpu;

  /// The CPU kind.
  constexpr device_kind() = default;

  /// The kind named `name`, defined now with `form` and `hardware` (what one numbered device
  /// of it is called in messages, e.g. "CUDA device") when new. Defining a name again with
  /// the same form returns the same kind. Throws pe::error for a name that is not
  /// [a-z][a-z0-9_]* or that is defined already with another form. Thread-safe.
  static device_kind define(std::string_view name, place_form form, std::string_view hardware);

  /// The kind named `name`, if defined.
  static std::optional<device_kind> find(std::string_view name);

  /// Every defined kind, built-in ones first, in the order defined.
  static std::vector<device_kind> all();

  const std::string& name() const;
  place_form form() const;
  const std::string& hardware() const;

  friend constexpr bool operator==(device_kind a, device_kind b) { return a.id_ == b.id_; }
  friend constexpr auto operator<=>(device_kind a, device_kind b) { return a.id_ <=> b.id_; }

 private:
  constexpr explicit device_kind(int id) : id_(id) {}
  int id_ = 0;
};

inline constexpr device_kind device_kind::cpu{0};
inline constexpr device_kind device_kind::gpu{1};

/// The kind's name.
std::string to_string(device_kind kind);

} // namespace pe
