# Finds everything xfbench builds against. Each missing piece stops configuration with the package
# that provides it and the one command that installs it (cmake/install_deps.sh installs them all).

function(xf_require found what command)
  if(NOT ${found})
    message(FATAL_ERROR "xfbench: ${what} not found. Install it with: ${command}")
  endif()
endfunction()

# CUDA toolkit: runtime, cuBLAS/cuBLASLt, cuDNN, NCCL.
find_package(CUDAToolkit REQUIRED)
set(_xf_cuda_libdirs ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}/lib64 /usr/lib/x86_64-linux-gnu)
find_path(XF_CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/include)
find_library(XF_CUDNN_LIBRARY cudnn HINTS ${_xf_cuda_libdirs})
xf_require(XF_CUDNN_LIBRARY "cuDNN 9 (libcudnn.so)" "apt-get install -y cudnn9-cuda-13 (NVIDIA's repository) or pip install nvidia-cudnn-cu13")
find_path(XF_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/include)
find_library(XF_NCCL_LIBRARY nccl HINTS ${_xf_cuda_libdirs})
xf_require(XF_NCCL_LIBRARY "NCCL 2 (libnccl.so)" "apt-get install -y libnccl-dev")
if(NOT TARGET xf::cudnn)
  add_library(xf::cudnn UNKNOWN IMPORTED)
  set_target_properties(xf::cudnn PROPERTIES IMPORTED_LOCATION ${XF_CUDNN_LIBRARY}
                        INTERFACE_INCLUDE_DIRECTORIES ${XF_CUDNN_INCLUDE_DIR})
  add_library(xf::nccl UNKNOWN IMPORTED)
  set_target_properties(xf::nccl PROPERTIES IMPORTED_LOCATION ${XF_NCCL_LIBRARY}
                        INTERFACE_INCLUDE_DIRECTORIES ${XF_NCCL_INCLUDE_DIR})
endif()

# Headers that come from PyPI wheels (pinned in cmake/requirements.txt): look in Python's site-packages.
execute_process(COMMAND python3 -c "import sysconfig; print(sysconfig.get_paths()['purelib'])"
                OUTPUT_VARIABLE XF_PYTHON_SITE OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)

find_path(XF_NVML_INCLUDE_DIR nvml.h
          HINTS ${XF_PYTHON_SITE}/nvidia/cu13/include ${XF_PYTHON_SITE}/nvidia/nvml/include
                ${CUDAToolkit_INCLUDE_DIRS})
xf_require(XF_NVML_INCLUDE_DIR "NVML headers (nvml.h)" "pip install nvidia-nvml-dev==13.0.87")

find_path(XF_CUDNN_FRONTEND_INCLUDE_DIR cudnn_frontend.h
          HINTS ${XF_PYTHON_SITE}/include ${XF_PYTHON_SITE}/cudnn_frontend/include
                ${XF_PYTHON_SITE}/nvidia/cudnn_frontend/include /usr/include)

# CUTLASS/CuTe (header-only, from the nvidia-cutlass wheel): the fused GEMM epilogues (sm_90a).
find_path(XF_CUTLASS_INCLUDE_DIR cutlass/cutlass.h
          HINTS ${XF_PYTHON_SITE}/cutlass_library/source/include)
xf_require(XF_CUTLASS_INCLUDE_DIR "CUTLASS headers (cutlass/cutlass.h)" "pip install nvidia-cutlass==4.2.0.0")
get_filename_component(XF_CUTLASS_UTIL_INCLUDE_DIR "${XF_CUTLASS_INCLUDE_DIR}/../tools/util/include" ABSOLUTE)

# Harness: Google Benchmark (shared), Boost.DLL (header-only), GoogleTest.
find_package(benchmark 1.7.1 EXACT CONFIG QUIET)
xf_require(benchmark_FOUND "Google Benchmark 1.7.1 (shared library)" "apt-get install -y libbenchmark-dev")
get_target_property(_xf_bm_type benchmark::benchmark TYPE)
if(NOT _xf_bm_type STREQUAL "SHARED_LIBRARY")
  message(FATAL_ERROR "xfbench: Google Benchmark must be a shared library (plugins and the host share its "
                      "registry); found ${_xf_bm_type}. Install it with: apt-get install -y libbenchmark-dev")
endif()
set(XFBENCH_BENCHMARK_VERSION ${benchmark_VERSION})

find_path(XF_BOOST_INCLUDE_DIR boost/dll.hpp)
xf_require(XF_BOOST_INCLUDE_DIR "Boost.DLL headers" "apt-get install -y libboost-dev")

if(XFBENCH_BUILD_TESTS)
  find_package(GTest CONFIG QUIET)
  xf_require(GTest_FOUND "GoogleTest" "apt-get install -y libgtest-dev")
endif()
