// CPU shim: lets a kernel file of this folder compile as plain C++ (g++, -ffp-contract=off) so
// that its logic runs on a machine without a GPU (docs/design.md §10). Included only when CTX_SHIM is
// defined; NVRTC never sees it.
//
// What it emulates, and the rule the kernels keep for it to be exact:
// - `threadIdx`/`blockIdx`/`blockDim`/`gridDim` are thread-local variables that the launcher
//   sets before calling the kernel once per (block, thread), blocks and threads in order — or,
//   with a schedule other than 0, in reverse or in a seeded shuffled order, so that a kernel
//   whose result depends on which thread runs first (an atomicAdd slot order leaking into the
//   output, a tie broken by arrival) fails the parity tests here as it would on a GPU;
// - atomics are real (`__atomic` builtins), and a grid may be run by several OS threads at
//   once (each takes every `stride`-th pair of the schedule from `first`): the kernels' threads
//   then truly interleave, so a plain read of memory another thread of the same launch writes
//   (a race on a GPU) can change the result here too;
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

// The `i`-th (block, thread) pair to run of a grid of `n`: schedule 0 in order, 1 reversed,
// any other value a seeded affine permutation i -> (a*i + c) mod n, `a` a prime that does not
// divide n (so the map is a bijection) and `c` from the seed.
inline unsigned long long ctx_shim_visit(unsigned long long i, unsigned long long n,
                                         unsigned long long schedule) {
  if (schedule == 0) return i;
  if (schedule == 1) return n - 1 - i;
  static const unsigned long long primes[] = {2654435761ull, 2246822519ull, 3266489917ull,
                                              668265263ull,  374761393ull,  1000000007ull};
  unsigned k = (unsigned)(schedule % 6);
  unsigned long long a = primes[k];
  while (n % a == 0) a = primes[++k % 6];
  unsigned long long c = (schedule * 0x9E3779B97F4A7C15ull) % n;
  return (a % n * i + c) % n;
}

// Exports kernel `name` (taking one `const P` by value) as the C function `ctx_shim_<name>`,
// which runs the (block, thread) pairs `first`, `first + stride`, ... of the grid's schedule
// (ctx_shim_visit; 0: blocks x fastest, then y, and in each block its threads in order): the
// whole grid with (0, 1), or one OS thread's share when several run the launch together.
#define CTX_EXPORT(name, P)                                                                 \
  extern "C" void ctx_shim_##name(unsigned gx, unsigned gy, unsigned bx, const void* params, \
                                  unsigned long long schedule, unsigned long long first,    \
                                  unsigned long long stride) {                              \
    P p;                                                                                    \
    std::memcpy(&p, params, sizeof(P));                                                     \
    gridDim = dim3{gx, gy, 1};                                                              \
    blockDim = dim3{bx, 1, 1};                                                              \
    unsigned long long n = (unsigned long long)gx * gy * bx;                                \
    for (unsigned long long i = first; i < n; i += stride) {                                \
      unsigned long long k = ctx_shim_visit(i, n, schedule);                                \
      threadIdx = uint3{(unsigned)(k % bx), 0, 0};                                          \
      blockIdx = uint3{(unsigned)(k / bx % gx), (unsigned)(k / bx / gx), 0};                \
      name(p);                                                                              \
    }                                                                                       \
  }
