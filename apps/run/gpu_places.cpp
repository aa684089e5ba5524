#include "apps/run/gpu_places.hpp"

namespace pe {

std::vector<place> list_places(const place_list& list, const std::string& text,
                               const gpu_inventory& gpus) {
  return list_places(list, text, as_device_inventory(gpus));
}

std::vector<place> parse_gpu_places(const std::string& text, const gpu_inventory& gpus) {
  return list_places(parse_gpu_place_list(text), text, gpus);
}

std::string gpu_places_help() {
  if (!gpu_build()) return "GPU places (gpu:...) need the CUDA build; this build has none";
  return "gpu:all, gpu:N[,M...] or gpu:NxK: CUDA devices (numbered after CUDA_VISIBLE_DEVICES; "
         "NxK is K places on device N, each with its own streams); they need a GPU and its "
         "driver when the run starts";
}

std::string gpu_places_text(const std::vector<place>& places) {
  return place_list_text(places);
}

} // namespace pe
