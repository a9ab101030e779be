// y = a*x + y on the GPU and on the CPU (the case's CPU twin and its reference).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

void axpy_gpu(float a, const float* x, float* y, std::size_t n, cudaStream_t stream);
void axpy_cpu(float a, const float* x, float* y, std::size_t n);
