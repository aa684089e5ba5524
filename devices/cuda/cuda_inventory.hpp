#pragma once

#include <string>

namespace pe {

/// The PCI bus id of CUDA device `device` ("0000:3B:00.0"): which GPU of the machine it is,
/// whatever CUDA_VISIBLE_DEVICES numbers it. Throws pe::error when the runtime cannot say.
std::string cuda_pci_bus_id(int device);

} // namespace pe
