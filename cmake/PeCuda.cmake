# Decides whether the CUDA places are built, from PE_WITH_CUDA (AUTO, ON or OFF), and sets
# PE_CUDA to ON or OFF for the rest of the build.
#
# AUTO builds them when nvcc is found (check_language), so a machine with the toolkit but no
# GPU (CI) compiles every .cu file; ON stops with an error naming what is missing; OFF never
# looks. With a sanitizer (PE_SANITIZE) or PE_FUZZ, AUTO builds without CUDA: nvcc takes no
# -fsanitize.
#
# When on: the CUDA language is enabled for sm_90 (H100/H200) unless CMAKE_CUDA_ARCHITECTURES
# is given, CUDA::cudart and CUDA::cublas come from find_package(CUDAToolkit), cuDNN (required:
# the convolutions run through it) from cmake/FindCUDNN.cmake (CUDNN::cudnn; -DCUDNN_ROOT=DIR
# for a copy outside the toolkit), and NCCL from cmake/FindNCCL.cmake when the toolkit or
# NCCL_ROOT ships it (PE_NCCL is ON then, and NCCL::nccl exists).

string(TOUPPER "${PE_WITH_CUDA}" pe_with_cuda_)
if(NOT pe_with_cuda_ MATCHES "^(AUTO|ON|OFF|TRUE|FALSE|YES|NO|1|0)$")
  message(FATAL_ERROR "PE_WITH_CUDA=${PE_WITH_CUDA}: expected AUTO, ON or OFF")
endif()
if(pe_with_cuda_ MATCHES "^(TRUE|YES|1)$")
  set(pe_with_cuda_ ON)
elseif(pe_with_cuda_ MATCHES "^(FALSE|NO|0)$")
  set(pe_with_cuda_ OFF)
endif()

set(PE_CUDA OFF)
set(PE_NCCL OFF)

if(pe_with_cuda_ STREQUAL "AUTO" AND (PE_SANITIZE OR PE_FUZZ))
  message(STATUS "CUDA places: off (PE_WITH_CUDA=AUTO in a sanitizer or fuzzing build; nvcc takes no sanitizer)")
elseif(NOT pe_with_cuda_ STREQUAL "OFF")
  # Before enable_language: CMake's own default architecture (75) cannot run Hopper's
  # instructions and makes every H100 launch JIT-compile PTX.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90)
  endif()
  # check_language looks on PATH only: also try the toolkit's usual homes, so that a shell
  # without /usr/local/cuda/bin on PATH (CI's) still builds the CUDA places.
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
    find_program(PE_NVCC nvcc PATHS ENV CUDA_HOME ENV CUDA_PATH /usr/local/cuda PATH_SUFFIXES bin
                 NO_DEFAULT_PATH)
    if(PE_NVCC)
      set(ENV{CUDACXX} "${PE_NVCC}")
    endif()
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  set(pe_cuda_missing_ "")
  if(NOT CMAKE_CUDA_COMPILER)
    set(pe_cuda_missing_ "no CUDA compiler (nvcc) was found: put the toolkit's bin/ (e.g. /usr/local/cuda/bin) on PATH or set CMAKE_CUDA_COMPILER")
  else()
    # CMake 3.25's FindCUDAToolkit (Debian 12's) sets a DEPRECATION property on
    # CUDA::nvToolsExt whenever the project requires CMake >= 3.25, without checking that the
    # target exists; CUDA 13 ships no nvToolsExt, so the property call stops the configure
    # ("set_property could not find TARGET CUDA::nvToolsExt"). The variable only selects that
    # warning, so the module runs as for a project requiring 3.24 (newer CMakes check).
    if(CMAKE_VERSION VERSION_LESS 3.26)
      set(pe_min_required_ "${CMAKE_MINIMUM_REQUIRED_VERSION}")
      set(CMAKE_MINIMUM_REQUIRED_VERSION 3.24)
      find_package(CUDAToolkit)
      set(CMAKE_MINIMUM_REQUIRED_VERSION "${pe_min_required_}")
    else()
      find_package(CUDAToolkit)
    endif()
    if(NOT CUDAToolkit_FOUND)
      set(pe_cuda_missing_ "nvcc (${CMAKE_CUDA_COMPILER}) was found but not the CUDA toolkit's libraries (find_package(CUDAToolkit))")
    elseif(NOT TARGET CUDA::cublas)
      set(pe_cuda_missing_ "the CUDA toolkit at ${CUDAToolkit_LIBRARY_ROOT} has no cuBLAS (CUDA::cublas)")
    else()
      find_package(CUDNN)
      if(NOT CUDNN_FOUND)
        set(pe_cuda_missing_ "no cuDNN was found (include/cudnn.h and libcudnn under CUDNN_ROOT or /usr/local/cuda): set -DCUDNN_ROOT to a folder with include/cudnn.h and lib/ or lib64/libcudnn.so.9")
      endif()
    endif()
  endif()

  if(pe_cuda_missing_)
    if(pe_with_cuda_ STREQUAL "ON")
      message(FATAL_ERROR "PE_WITH_CUDA=ON but ${pe_cuda_missing_}")
    endif()
    message(STATUS "CUDA places: off (${pe_cuda_missing_})")
  else()
    enable_language(CUDA)
    # C++20 in .cu files as in the rest. CMake 3.25 knows no C++20 flag for nvcc (it
    # asks for one as soon as a target with CXX_STANDARD 20 has .cu files): nvcc 12+ takes
    # -std=c++20.
    if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    endif()
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    if(CCACHE_PROGRAM)
      set(CMAKE_CUDA_COMPILER_LAUNCHER "${CCACHE_PROGRAM}")
    endif()
    set(PE_CUDA ON)
    find_package(NCCL)
    if(NCCL_FOUND)
      set(PE_NCCL ON)
    endif()
    message(STATUS "CUDA places: on (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, architectures ${CMAKE_CUDA_ARCHITECTURES}, cuDNN ${CUDNN_VERSION} at ${CUDNN_LIBRARY}, NCCL ${PE_NCCL})")
  endif()
endif()
