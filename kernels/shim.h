// CPU shim: lets a kernel file of this folder compile as plain C++ (g++, -ffp-contract=off) so
// that its logic runs on a machine without a GPU (DESIGN.md §10). Included only when CTX_SHIM is
// defined; NVRTC never sees it.
//
// What it emulates, and the rule the kernels keep for it to be exact:
// - `threadIdx`/`blockIdx`/`blockDim`/`gridDim` are thread-local variables that the launcher
//   sets before calling the kernel once per (block, thread), blocks and threads in order;
// - atomics are real (`__atomic` builtins), so kernels may also be run from several OS threads;
// - there is no `__syncthreads` and no warp primitive: every kernel of this project is written
//   without block-level synchronisation (each thread's result depends only on memory written by
//   earlier launches or on atomics), so running its threads one after another is a legal
//   schedule of the GPU's — and any kernel that needed a barrier would fail to compile here.
#pragma once

#include <cstdint>
#include <cstring>
#include <cmath>

#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__

struct ctx_dim3 {
  unsigned x, y, z;
};
typedef ctx_dim3 uint3;
typedef ctx_dim3 dim3;

inline thread_local uint3 threadIdx;
inline thread_local uint3 blockIdx;
inline thread_local dim3 blockDim;
inline thread_local dim3 gridDim;

inline unsigned atomicAdd(unsigned* p, unsigned v) {
  return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
inline unsigned atomicMin(unsigned* p, unsigned v) {
  unsigned old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
  while (v < old && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
  }
  return old;
}
inline unsigned long long atomicMin(unsigned long long* p, unsigned long long v) {
  unsigned long long old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
  while (v < old && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
  }
  return old;
}
inline unsigned __float_as_uint(float f) {
  unsigned u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float __uint_as_float(unsigned u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline float fminf_(float a, float b) { return std::fmin(a, b); }

// Exports kernel `name` (taking one `const P` by value) as the C function `ctx_shim_<name>`,
// which runs the whole grid: blocks (x fastest, then y), and in each block its threads in order.
#define CTX_EXPORT(name, P)                                                                 \
  extern "C" void ctx_shim_##name(unsigned gx, unsigned gy, unsigned bx, const void* params) { \
    P p;                                                                                    \
    std::memcpy(&p, params, sizeof(P));                                                     \
    gridDim = dim3{gx, gy, 1};                                                              \
    blockDim = dim3{bx, 1, 1};                                                              \
    for (unsigned y = 0; y < gy; ++y)                                                       \
      for (unsigned x = 0; x < gx; ++x)                                                     \
        for (unsigned t = 0; t < bx; ++t) {                                                 \
          blockIdx = uint3{x, y, 0};                                                        \
          threadIdx = uint3{t, 0, 0};                                                       \
          name(p);                                                                          \
        }                                                                                   \
  }
