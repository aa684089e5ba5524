# Finds NCCL (no CMake config of its own): under NCCL_ROOT (the CMake variable or the
# environment's), else the CUDA toolkit's /usr/local/cuda. A PyTorch wheel's copy
# (nvidia-nccl-cu13: include/ and lib/libnccl.so.2, no unversioned .so) is found by pointing
# NCCL_ROOT at its folder, as scripts/gpu_check.sh does on the GPU machine.
# Defines NCCL_FOUND and the imported target NCCL::nccl.
find_path(NCCL_INCLUDE_DIR nccl.h
  HINTS ${NCCL_ROOT} ENV NCCL_ROOT /usr/local/cuda ENV CUDA_HOME
  PATH_SUFFIXES include)
find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2 NAMES_PER_DIR
  HINTS ${NCCL_ROOT} ENV NCCL_ROOT /usr/local/cuda ENV CUDA_HOME
  PATH_SUFFIXES lib64 lib)

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(NCCL REQUIRED_VARS NCCL_INCLUDE_DIR NCCL_LIBRARY)

if(NCCL_FOUND AND NOT TARGET NCCL::nccl)
  add_library(NCCL::nccl UNKNOWN IMPORTED)
  set_target_properties(NCCL::nccl PROPERTIES
    IMPORTED_LOCATION "${NCCL_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
endif()
mark_as_advanced(NCCL_INCLUDE_DIR NCCL_LIBRARY)
