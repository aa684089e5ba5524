# Finds cuDNN 9 (no CMake config of its own): under CUDNN_ROOT (the CMake variable or the
# environment's), else the CUDA toolkit's /usr/local/cuda. A PyTorch wheel's copy
# (nvidia-cudnn-cu13: include/ and lib/libcudnn.so.9, no unversioned .so) is found by pointing
# CUDNN_ROOT at its folder, as scripts/gpu_check.sh does on the GPU machine.
# Defines CUDNN_FOUND, CUDNN_VERSION (from cudnn_version.h) and the imported target CUDNN::cudnn.
find_path(CUDNN_INCLUDE_DIR cudnn.h
  HINTS ${CUDNN_ROOT} ENV CUDNN_ROOT /usr/local/cuda
  PATH_SUFFIXES include)
find_library(CUDNN_LIBRARY NAMES cudnn libcudnn.so.9 NAMES_PER_DIR
  HINTS ${CUDNN_ROOT} ENV CUDNN_ROOT /usr/local/cuda
  PATH_SUFFIXES lib64 lib)

set(CUDNN_VERSION "")
if(CUDNN_INCLUDE_DIR AND EXISTS "${CUDNN_INCLUDE_DIR}/cudnn_version.h")
  file(STRINGS "${CUDNN_INCLUDE_DIR}/cudnn_version.h" cudnn_version_lines_
       REGEX "^#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) +[0-9]+")
  foreach(part_ MAJOR MINOR PATCHLEVEL)
    string(REGEX MATCH "CUDNN_${part_} +([0-9]+)" _ "${cudnn_version_lines_}")
    list(APPEND cudnn_version_parts_ "${CMAKE_MATCH_1}")
  endforeach()
  string(JOIN "." CUDNN_VERSION ${cudnn_version_parts_})
  unset(cudnn_version_lines_)
  unset(cudnn_version_parts_)
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CUDNN REQUIRED_VARS CUDNN_INCLUDE_DIR CUDNN_LIBRARY
                                  VERSION_VAR CUDNN_VERSION)

if(CUDNN_FOUND AND NOT TARGET CUDNN::cudnn)
  add_library(CUDNN::cudnn UNKNOWN IMPORTED)
  set_target_properties(CUDNN::cudnn PROPERTIES
    IMPORTED_LOCATION "${CUDNN_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${CUDNN_INCLUDE_DIR}")
endif()
mark_as_advanced(CUDNN_INCLUDE_DIR CUDNN_LIBRARY)
