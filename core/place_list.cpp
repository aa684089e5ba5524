#include "core/place_list.hpp"

#include <charconv>
#include <set>

#include "core/error.hpp"

namespace pe {

namespace {

constexpr std::string_view cpu_prefix = "cpu:";
constexpr std::string_view gpu_prefix = "gpu:";

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

[[noreturn]] void bad_gpu_syntax(const std::string& text) {
  throw error("--places: expected gpu:all, gpu:N[,M...] (CUDA devices) or gpu:NxK (K places on "
              "device N), got '" + text + "'");
}

/// gpu:N or gpu:NxK: one item; bad syntax otherwise.
gpu_place_item gpu_item(std::string_view part, const std::string& text) {
  const auto x = part.find('x');
  const auto device = decimal(part.substr(0, x), max_small_digits);
  if (!device) bad_gpu_syntax(text);
  gpu_place_item item{*device, 1};
  if (x != std::string_view::npos) {
    const auto count = decimal(part.substr(x + 1), max_small_digits);
    if (!count || *count < 1) bad_gpu_syntax(text);
    item.count = *count;
  }
  return item;
}

/// "gpu:0x2,1" -> "0x2", "1" as items, in order.
std::vector<gpu_place_item> gpu_items(std::string_view spec, const std::string& text) {
  std::vector<gpu_place_item> items;
  while (true) {
    const auto comma = spec.find(',');
    items.push_back(gpu_item(spec.substr(0, comma), text));
    if (comma == std::string_view::npos) return items;
    spec.remove_prefix(comma + 1);
  }
}

} // namespace

place_list parse_gpu_place_list(const std::string& text) {
  if (!text.starts_with(gpu_prefix)) bad_gpu_syntax(text);
  place_list list;
  list.type = place::kind::gpu;
  const std::string_view spec = std::string_view(text).substr(gpu_prefix.size());
  if (spec == "all") {
    list.all_gpus = true;
    return list;
  }
  list.gpu_items = gpu_items(spec, text);
  std::set<int> seen;
  for (const gpu_place_item& item : list.gpu_items)
    if (!seen.insert(item.device).second)
      throw error("--places " + text + ": CUDA device " + std::to_string(item.device) +
                  " is listed twice (for several places on one GPU write gpu:" +
                  std::to_string(item.device) + "xK)");
  return list;
}

place_list parse_place_list(const std::string& text) {
  if (text.starts_with(gpu_prefix)) return parse_gpu_place_list(text);
  const auto count = text.starts_with(cpu_prefix)
                         ? decimal(std::string_view(text).substr(cpu_prefix.size()), text.size())
                         : std::nullopt;
  if (!count || *count < 1)
    throw error("--places: expected cpu:N with N >= 1 CPU places, got '" + text + "'");
  place_list list;
  list.cpu_count = *count;
  return list;
}

std::vector<place> list_places(const place_list& list, const std::string& text, int gpu_count,
                               const std::string& why_no_gpus) {
  if (list.type == place::kind::cpu) return make_cpu_places(list.cpu_count);
  if (gpu_count <= 0) throw error("--places " + text + ": " + why_no_gpus);
  std::vector<gpu_place_item> items = list.gpu_items;
  if (list.all_gpus)
    for (int d = 0; d < gpu_count; ++d) items.push_back({d, 1});
  for (const gpu_place_item& item : items)
    if (item.device >= gpu_count)
      throw error("--places " + text + ": no CUDA device " + std::to_string(item.device) +
                  " (this process sees " + std::to_string(gpu_count) + " GPU" +
                  (gpu_count == 1 ? "" : "s") + ", numbered from 0 after CUDA_VISIBLE_DEVICES)");
  std::vector<place> places;
  for (const gpu_place_item& item : items)
    for (int k = 0; k < item.count; ++k)
      places.push_back(place::gpu(static_cast<int>(places.size()), item.device));
  return places;
}

std::string place_list_text(const std::vector<place>& places) {
  if (places.empty() || places.front().type == place::kind::cpu)
    return std::string(cpu_prefix) + std::to_string(places.size());
  std::string text(gpu_prefix);
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
  const bool cpu = name.starts_with(cpu_prefix);
  if (!cpu && !name.starts_with(gpu_prefix)) return std::nullopt;
  const auto index = decimal(name.substr(cpu_prefix.size()), max_small_digits);
  if (!index) return std::nullopt;
  return cpu ? place::cpu(*index) : place::gpu(*index);
}

std::vector<place> make_cpu_places(int count) {
  std::vector<place> places;
  for (int i = 0; i < count; ++i) places.push_back(place::cpu(i));
  return places;
}

} // namespace pe
