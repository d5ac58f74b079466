// The bf16 rounding of GEMM operands for the CUDA backend's mixed-precision products: each thread
// turns 8 floats of a row into one 16-byte store of 8 bf16, zero-padding every row to a length
// that is a multiple of 8 (16 bytes), which cuBLAS's tensor-core kernels like.
#include <cuda_bf16.h>

#include <cstdint>

#include "training/backends/cuda/device_math.cuh"
#include "training/backends/cuda/kernels.h"

namespace tuner::training::cuda {
namespace {

constexpr int kMaxOperands = 2;

struct Bf16Jobs {
  Bf16Operand op[kMaxOperands];
  bool vec[kMaxOperands];  // rows may be read as float4 (src, src_ld, src_stride 16-byte aligned)
};

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const uint32_t l = __bfloat16_as_ushort(__float2bfloat16_rn(lo));
  const uint32_t h = __bfloat16_as_ushort(__float2bfloat16_rn(hi));
  return l | (h << 16);
}

// blockIdx.y picks the operand; a grid-stride loop over its units (row, group of 8 columns).
// Index is uint32_t when every offset of the launch fits, which keeps the divisions cheap.
template <typename Index>
__global__ void to_bf16_kernel(Bf16Jobs jobs) {
  const Bf16Operand& o = jobs.op[blockIdx.y];
  const bool vec = jobs.vec[blockIdx.y];
  const Index groups = static_cast<Index>(o.dst_ld / 8);
  const Index rows = static_cast<Index>(o.rows);
  const Index units = static_cast<Index>(o.matrices) * rows * groups;
  const Index cols = static_cast<Index>(o.cols);
  for (Index u = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; u < units;
       u += static_cast<Index>(gridDim.x) * blockDim.x) {
    const Index row = u / groups, g = u - row * groups;
    const Index m = row / rows, r = row - m * rows;
    const float* src =
        o.src + static_cast<int64_t>(m) * o.src_stride + static_cast<int64_t>(r) * o.src_ld;
    const Index c = g * 8;
    float v[8];
    if (vec && c + 8 <= cols) {
      const float4 lo = __ldg(reinterpret_cast<const float4*>(src + c));
      const float4 hi = __ldg(reinterpret_cast<const float4*>(src + c + 4));
      v[0] = lo.x, v[1] = lo.y, v[2] = lo.z, v[3] = lo.w;
      v[4] = hi.x, v[5] = hi.y, v[6] = hi.z, v[7] = hi.w;
    } else {
#pragma unroll
      for (int j = 0; j < 8; ++j) v[j] = c + j < cols ? __ldg(src + c + j) : 0.0f;
    }
    reinterpret_cast<uint4*>(o.dst + static_cast<int64_t>(row) * o.dst_ld)[g] = make_uint4(
        pack_bf16(v[0], v[1]), pack_bf16(v[2], v[3]), pack_bf16(v[4], v[5]), pack_bf16(v[6], v[7]));
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

cudaError_t launch_to_bf16(const Bf16Operand* ops, int count, cudaStream_t s) {
  if (count < 1 || count > kMaxOperands) return cudaErrorInvalidValue;
  Bf16Jobs jobs{};
  int64_t max_units = 0, max_extent = 0;
  for (int i = 0; i < count; ++i) {
    const Bf16Operand& o = ops[i];
    if (o.dst_ld % 8 != 0 || o.dst_ld < o.cols || !aligned16(o.dst) || o.rows < 0 || o.cols < 0 ||
        o.matrices < 0) {
      return cudaErrorInvalidValue;
    }
    jobs.op[i] = o;
    jobs.vec[i] = aligned16(o.src) && o.src_ld % 4 == 0 && o.src_stride % 4 == 0;
    const int64_t units = o.matrices * o.rows * (o.dst_ld / 8);
    max_units = std::max(max_units, units);
    if (units > 0) {
      const int64_t src_extent = (o.matrices - 1) * o.src_stride + (o.rows - 1) * o.src_ld + o.cols;
      max_extent = std::max({max_extent, src_extent, o.matrices * o.rows * o.dst_ld});
    }
  }
  if (max_units == 0) return cudaSuccess;
  const dim3 grid(grid_for(max_units), static_cast<unsigned int>(count));
  // Unit indices run up to max_units + one grid's worth past it before the loop ends.
  const int64_t index_bound = max_units + static_cast<int64_t>(grid.x) * kThreads;
  if (std::max(max_extent, index_bound) < (int64_t{1} << 31)) {
    to_bf16_kernel<uint32_t><<<grid, kThreads, 0, s>>>(jobs);
  } else {
    to_bf16_kernel<uint64_t><<<grid, kThreads, 0, s>>>(jobs);
  }
  return cudaGetLastError();
}

}  // namespace tuner::training::cuda
