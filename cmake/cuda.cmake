# CUDA device path: src/device/ and the CUDA-only files of src/gpucodec/ (*.cu, *_gpu.c) and src/jit/ (*_gpu.c:
# the launch side of the kernels built at run time; NVRTC itself is loaded with dlopen, in every build). Sets
# ZGPU_HAVE_CUDA, ZGPU_CUDA_OBJECTS, ZGPU_CUDA_LIBS.
#
# ZGPU_CUDA=AUTO enables the device path when a CUDA compiler is found, ON requires one, OFF skips it.
# The pure-C parts of src/gpucodec/ (blosc header parsing, frame checks, zstd planning) and src/plan/waves.c
# need no CUDA: CMakeLists.txt always builds them, so their unit tests run in CI on machines without a GPU.
# nvCOMP and cuFile are loaded at run time with dlopen: neither is needed to build or to run.
set(ZGPU_HAVE_CUDA OFF)
set(ZGPU_CUDA_OBJECTS "")
set(ZGPU_CUDA_LIBS "")

# GPU architectures. By default every current GPU: machine code (SASS) for Turing (sm_75), Ampere (80, 86), Ada
# (89), Hopper (90) and Blackwell (100, 120), plus PTX of the newest so that later GPUs can compile it at load
# time; README.md ("GPU architectures") gives what each costs. ZGPU_CUDA_ARCHS picks others for quick development
# builds: "native" (the GPUs of this machine) or a list in CMake's syntax ("90": SASS and PTX of sm_90, "80;90",
# "90-real": SASS only). A CMAKE_CUDA_ARCHITECTURES given on the command line is used as it is.
set(ZGPU_CUDA_DEFAULT_ARCHS "75-real;80-real;86-real;89-real;90-real;100-real;120")
set(ZGPU_CUDA_ARCHS "" CACHE STRING
    "CUDA architectures: empty = every current GPU (${ZGPU_CUDA_DEFAULT_ARCHS}), native, or a list such as 90 or 80;90")

# Wheels (scripts/build-wheel-cuda.sh): the CUDA runtime linked as libcudart.so.N, which the pip-installed
# nvidia-cuda-runtime wheel or the system provides (the Python package preloads it), instead of a static copy; and
# no directory of the build machine compiled in (ZGPU_NVCOMP_CONFIGURED_DIR below: a wheel finds nvCOMP at run time).
set(ZGPU_CUDART "static" CACHE STRING "CUDA runtime: static (libcudart_static.a) or shared (libcudart.so.N)")
option(ZGPU_RELOCATABLE "Compile in no path of the build machine (wheels)" OFF)

string(TOUPPER "${ZGPU_CUDA}" ZGPU_CUDA_MODE)
if(NOT ZGPU_CUDA_MODE STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # (set as a plain variable, so enable_language keeps it out of the cache: a later configure with another
    # ZGPU_CUDA_ARCHS, or none, takes effect)
    if(NOT ZGPU_CUDA_ARCHS STREQUAL "")
      set(CMAKE_CUDA_ARCHITECTURES "${ZGPU_CUDA_ARCHS}")
    elseif(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES "${ZGPU_CUDA_DEFAULT_ARCHS}")
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit)
  endif()
  if(CMAKE_CUDA_COMPILER AND CUDAToolkit_FOUND)
    set(ZGPU_HAVE_CUDA ON)
  elseif(ZGPU_CUDA_MODE STREQUAL "ON")
    message(FATAL_ERROR "ZGPU_CUDA=ON but no CUDA compiler/toolkit was found")
  else()
    message(STATUS "zgpu: CUDA not found, building without the device path")
  endif()
endif()

if(ZGPU_HAVE_CUDA)
  file(GLOB_RECURSE ZGPU_CUDA_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/device/*.c
       ${CMAKE_SOURCE_DIR}/src/gpucodec/*.cu ${CMAKE_SOURCE_DIR}/src/gpucodec/*_gpu.c
       ${CMAKE_SOURCE_DIR}/src/jit/*_gpu.c)
  add_library(zgpu_cuda_obj OBJECT ${ZGPU_CUDA_SOURCES})
  target_include_directories(zgpu_cuda_obj PRIVATE ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src)
  target_include_directories(zgpu_cuda_obj SYSTEM PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
  target_compile_definitions(zgpu_cuda_obj PRIVATE _GNU_SOURCE ZGPU_BUILDING ZGPU_HAVE_CUDA=1)
  target_compile_options(zgpu_cuda_obj PRIVATE
    $<$<COMPILE_LANGUAGE:C>:${ZGPU_WARNINGS} -fvisibility=hidden>
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-fvisibility=hidden --expt-relaxed-constexpr -lineinfo>)
  set_target_properties(zgpu_cuda_obj PROPERTIES POSITION_INDEPENDENT_CODE ON CUDA_STANDARD 17)

  # nvCOMP headers are optional at compile time (the adapter declares what it uses otherwise); the
  # library directory found here is remembered as one place to dlopen libnvcomp.so.6 from.
  set(ZGPU_NVCOMP_ROOT "" CACHE PATH "Directory holding include/nvcomp.h and lib64/libnvcomp.so.6 (optional)")
  set(_nvc_hints ${ZGPU_NVCOMP_ROOT} ${CMAKE_SOURCE_DIR}/.venv ${CMAKE_SOURCE_DIR}/.nvcomp)
  file(GLOB _venv_nvc ${CMAKE_SOURCE_DIR}/.venv/lib/python3*/site-packages/nvidia/libnvcomp)
  list(APPEND _nvc_hints ${_venv_nvc})
  find_path(ZGPU_NVCOMP_INCLUDE nvcomp/zstd.h HINTS ${_nvc_hints} PATH_SUFFIXES include NO_DEFAULT_PATH)
  find_path(ZGPU_NVCOMP_LIBDIR libnvcomp.so.6 HINTS ${_nvc_hints} PATH_SUFFIXES lib64 lib NO_DEFAULT_PATH)
  if(ZGPU_NVCOMP_LIBDIR AND NOT ZGPU_RELOCATABLE)
    target_compile_definitions(zgpu_cuda_obj PRIVATE ZGPU_NVCOMP_CONFIGURED_DIR="${ZGPU_NVCOMP_LIBDIR}")
  endif()
  message(STATUS "zgpu: CUDA ${CMAKE_CUDA_COMPILER_VERSION}, archs ${CMAKE_CUDA_ARCHITECTURES}, cudart ${ZGPU_CUDART}; nvCOMP headers: ${ZGPU_NVCOMP_INCLUDE}; nvCOMP lib dir: ${ZGPU_NVCOMP_LIBDIR}")

  target_compile_definitions(zgpu_obj PRIVATE ZGPU_HAVE_CUDA=1)
  target_include_directories(zgpu_obj SYSTEM PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
  set(ZGPU_CUDA_OBJECTS $<TARGET_OBJECTS:zgpu_cuda_obj>)
  # Consumers of the library (tests, CLI) see ZGPU_HAVE_CUDA and the CUDA headers through this target.
  add_library(zgpu_cuda_iface INTERFACE)
  target_compile_definitions(zgpu_cuda_iface INTERFACE ZGPU_HAVE_CUDA=1)
  if(ZGPU_CUDART STREQUAL "shared")
    target_link_libraries(zgpu_cuda_iface INTERFACE CUDA::cudart ${CMAKE_DL_LIBS} rt)
  else()
    target_link_libraries(zgpu_cuda_iface INTERFACE CUDA::cudart_static ${CMAKE_DL_LIBS} rt)
  endif()
  set(ZGPU_CUDA_LIBS zgpu_cuda_iface)
endif()
