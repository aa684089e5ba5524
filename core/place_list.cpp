#include "core/place_list.hpp"

#include <charconv>
#include <set>

#include "core/error.hpp"

namespace pe {

namespace {

/// Device numbers and per-device counts have at most this many digits.
constexpr std::size_t max_small_digits = 5;

/// `digits` as an int when it is only decimal digits (no sign, no spaces), at most
/// `max_digits` of them and within int's range; nullopt otherwise.
std::optional<int> decimal(std::string_view digits, std::size_t max_digits) {
  if (digits.empty() || digits.size() > max_digits ||
      digits.find_first_not_of("0123456789") != std::string_view::npos)
    return std::nullopt;
  int value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return value;
}

/// The kind named before the ':' of `text`, if any.
std::optional<place::kind> kind_of(std::string_view text) {
  const auto colon = text.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  return device_kind::find(text.substr(0, colon));
}

[[noreturn]] void bad_syntax(place::kind kind, const std::string& text) {
  const std::string& k = kind.name();
  if (kind.form() == place_form::replicas)
    throw error("--places: expected " + k + ":N with N >= 1 " + kind.hardware() + "s, got '" +
                text + "'");
  throw error("--places: expected " + k + ":all, " + k + ":N[,M...] (" + kind.hardware() +
              "s) or " + k + ":NxK (K places on device N), got '" + text + "'");
}

/// N or NxK: one item; bad syntax otherwise.
device_place_item device_item(std::string_view part, place::kind kind, const std::string& text) {
  const auto x = part.find('x');
  const auto device = decimal(part.substr(0, x), max_small_digits);
  if (!device) bad_syntax(kind, text);
  device_place_item item{*device, 1};
  if (x != std::string_view::npos) {
    const auto count = decimal(part.substr(x + 1), max_small_digits);
    if (!count || *count < 1) bad_syntax(kind, text);
    item.count = *count;
  }
  return item;
}

/// "0x2,1" -> "0x2", "1" as items, in order.
std::vector<device_place_item> device_items(std::string_view spec, place::kind kind,
                                            const std::string& text) {
  std::vector<device_place_item> items;
  while (true) {
    const auto comma = spec.find(',');
    items.push_back(device_item(spec.substr(0, comma), kind, text));
    if (comma == std::string_view::npos) return items;
    spec.remove_prefix(comma + 1);
  }
}

} // namespace

place_list parse_place_list_of(place::kind kind, const std::string& text) {
  const std::string prefix = kind.name() + ":";
  if (!text.starts_with(prefix)) bad_syntax(kind, text);
  const std::string_view spec = std::string_view(text).substr(prefix.size());
  place_list list;
  list.type = kind;
  if (kind.form() == place_form::replicas) {
    const auto count = decimal(spec, text.size());
    if (!count || *count < 1) bad_syntax(kind, text);
    list.replica_count = *count;
    return list;
  }
  if (spec == "all") {
    list.all_devices = true;
    return list;
  }
  list.items = device_items(spec, kind, text);
  std::set<int> seen;
  for (const device_place_item& item : list.items)
    if (!seen.insert(item.device).second)
      throw error("--places " + text + ": " + kind.hardware() + " " + std::to_string(item.device) +
                  " is listed twice (for several places on one device write " + prefix +
                  std::to_string(item.device) + "xK)");
  return list;
}

place_list parse_gpu_place_list(const std::string& text) {
  return parse_place_list_of(place::kind::gpu, text);
}

place_list parse_place_list(const std::string& text) {
  // A name that is no kind reads as a CPU list gone wrong: cpu:N is what most runs want.
  return parse_place_list_of(kind_of(text).value_or(place::kind::cpu), text);
}

std::vector<place> list_places(const place_list& list, const std::string& text,
                               const device_inventory& devices) {
  std::vector<place> places;
  if (list.type.form() == place_form::replicas) {
    for (int i = 0; i < list.replica_count; ++i) places.push_back(place{list.type, i, 0});
    return places;
  }
  if (devices.count <= 0) throw error("--places " + text + ": " + devices.problem);
  std::vector<device_place_item> items = list.items;
  if (list.all_devices)
    for (int d = 0; d < devices.count; ++d) items.push_back({d, 1});
  for (const device_place_item& item : items)
    if (item.device >= devices.count)
      throw error("--places " + text + ": no " + list.type.hardware() + " " +
                  std::to_string(item.device) + " (this process sees " +
                  std::to_string(devices.count) + " " + list.type.hardware() +
                  (devices.count == 1 ? "" : "s") + ", " + devices.numbering + ")");
  for (const device_place_item& item : items)
    for (int k = 0; k < item.count; ++k)
      places.push_back(place{list.type, static_cast<int>(places.size()), item.device});
  return places;
}

std::string place_list_text(const std::vector<place>& places) {
  const place::kind kind = places.empty() ? place::kind::cpu : places.front().type;
  std::string text = kind.name() + ":";
  if (kind.form() == place_form::replicas) return text + std::to_string(places.size());
  for (std::size_t i = 0; i < places.size();) { // a run of places on one device is NxK
    std::size_t run = 1;
    while (i + run < places.size() && places[i + run].device == places[i].device) ++run;
    if (i > 0) text += ",";
    text += std::to_string(places[i].device);
    if (run > 1) text += "x" + std::to_string(run);
    i += run;
  }
  return text;
}

std::optional<place> parse_place_name(std::string_view name) {
  const auto kind = kind_of(name);
  if (!kind) return std::nullopt;
  const auto index = decimal(name.substr(kind->name().size() + 1), max_small_digits);
  if (!index) return std::nullopt;
  return place{*kind, *index, kind->form() == place_form::devices ? *index : 0};
}

std::vector<place> make_cpu_places(int count) {
  std::vector<place> places;
  for (int i = 0; i < count; ++i) places.push_back(place::cpu(i));
  return places;
}

} // namespace pe
