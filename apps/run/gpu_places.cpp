#include "apps/run/gpu_places.hpp"

#include <charconv>
#include <optional>
#include <set>
#include <string_view>

#include "core/error.hpp"

namespace pe {

namespace {

/// A non-negative decimal below 100000 (no sign, no spaces); nullopt otherwise.
std::optional<int> small_number(std::string_view digits) {
  if (digits.empty() || digits.size() > 5) return std::nullopt;
  int value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size() || value < 0) return std::nullopt;
  return value;
}

struct item {
  int device = 0;
  int count = 1; // logical places on it
};

[[noreturn]] void bad_syntax(const std::string& text) {
  throw error("--places: expected gpu:all, gpu:N[,M...] (CUDA devices) or gpu:NxK (K places on "
              "device N), got '" + text + "'");
}

} // namespace

std::vector<place> parse_gpu_places(const std::string& text, const gpu_inventory& gpus) {
  if (!text.starts_with("gpu:")) bad_syntax(text);
  const std::string_view spec = std::string_view(text).substr(4);
  const bool all = spec == "all";
  std::vector<item> items;
  if (!all) {
    std::string_view rest = spec;
    while (true) {
      const auto comma = rest.find(',');
      const std::string_view part = rest.substr(0, comma);
      const auto x = part.find('x');
      item it;
      const auto device = small_number(part.substr(0, x));
      if (!device) bad_syntax(text);
      it.device = *device;
      if (x != std::string_view::npos) {
        const auto count = small_number(part.substr(x + 1));
        if (!count || *count < 1) bad_syntax(text);
        it.count = *count;
      }
      items.push_back(it);
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
    std::set<int> seen;
    for (const item& it : items)
      if (!seen.insert(it.device).second)
        throw error("--places " + text + ": CUDA device " + std::to_string(it.device) +
                    " is listed twice (for several places on one GPU write gpu:" +
                    std::to_string(it.device) + "xK)");
  }

  if (!gpus.built || gpus.count == 0) throw error("--places " + text + ": " + gpus.problem);
  if (all)
    for (int d = 0; d < gpus.count; ++d) items.push_back({d, 1});
  for (const item& it : items)
    if (it.device >= gpus.count)
      throw error("--places " + text + ": no CUDA device " + std::to_string(it.device) +
                  " (this process sees " + std::to_string(gpus.count) + " GPU" +
                  (gpus.count == 1 ? "" : "s") + ", numbered from 0 after CUDA_VISIBLE_DEVICES)");

  std::vector<place> places;
  for (const item& it : items)
    for (int k = 0; k < it.count; ++k)
      places.push_back(place::gpu(static_cast<int>(places.size()), it.device));
  return places;
}

std::string gpu_places_help() {
  if (!gpu_build()) return "GPU places (gpu:...) need the CUDA build; this build has none";
  return "gpu:all, gpu:N[,M...] or gpu:NxK: CUDA devices (numbered after CUDA_VISIBLE_DEVICES; "
         "NxK is K places on device N, each with its own streams); they need a GPU and its "
         "driver when the run starts";
}

std::string gpu_places_text(const std::vector<place>& places) {
  std::string text = "gpu:";
  for (std::size_t i = 0; i < places.size();) {
    std::size_t run = 1;
    while (i + run < places.size() && places[i + run].device == places[i].device) ++run;
    if (i > 0) text += ",";
    text += std::to_string(places[i].device);
    if (run > 1) text += "x" + std::to_string(run);
    i += run;
  }
  return text;
}

} // namespace pe
