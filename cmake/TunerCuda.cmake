# CUDA detection. The build never needs a GPU: with nvcc present the CUDA code compiles and links;
# tests that need a device skip at run time when there is none.
set(TUNER_HAVE_CUDA OFF)
if(NOT TUNER_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER)
    find_program(TUNER_NVCC nvcc HINTS /usr/local/cuda/bin ENV CUDA_HOME PATH_SUFFIXES bin)
    if(TUNER_NVCC)
      set(CMAKE_CUDA_COMPILER "${TUNER_NVCC}")
    endif()
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # Hopper (H100/H200) natively, plus PTX so newer GPUs JIT-compile it. Set before
    # enable_language, which otherwise picks nvcc's own default (compute_75 PTX only).
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES "90-real;90-virtual")
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(TUNER_HAVE_CUDA ON)
    # CMake 3.25 does not know the C++20 flag of nvcc 13; the CUDA sources are C++17.
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  elseif(TUNER_CUDA STREQUAL "ON")
    message(FATAL_ERROR "TUNER_CUDA=ON but no CUDA compiler was found: install the CUDA toolkit "
                        "or configure with -DTUNER_CUDA=AUTO or OFF")
  endif()
endif()
message(STATUS "tuner: CUDA ${TUNER_HAVE_CUDA} (TUNER_CUDA=${TUNER_CUDA})")
