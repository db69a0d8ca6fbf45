// CPU shim: lets a kernel file of this folder compile as plain C++ (g++, -ffp-contract=off) so
// that its logic runs on a machine without a GPU (docs/design.md §10). Included only when CTX_SHIM is
// defined; NVRTC never sees it.
//
// What it emulates, and the rules the kernels keep for it to be exact:
// - `threadIdx`/`blockIdx`/`blockDim`/`gridDim` are thread-local variables that the launcher
//   sets before running a thread, blocks and threads in order — or, with a schedule other than
//   0, in reverse or in a seeded shuffled order, so that a kernel whose result depends on which
//   thread runs first (an atomicAdd slot order leaking into the output, a tie broken by
//   arrival) fails the parity tests here as it would on a GPU;
// - atomics are real (`__atomic` builtins), and a grid may be run by several OS threads at
//   once (each takes every `stride`-th pair of the schedule, or every `stride`-th block, from
//   `first`): the kernels' threads then truly interleave, so a plain read of memory another
//   thread of the same launch writes (a race on a GPU) can change the result here too;
// - kernels exported with `CTX_EXPORT` have no `__syncthreads`: each thread runs to its end
//   before the next starts (a legal GPU schedule for a kernel whose threads meet only through
//   atomics), and a barrier there aborts the test with the kernel's name;
// - kernels exported with `CTX_EXPORT_BLOCK` are block-cooperative (one block walks a lane's
//   phases, `__syncthreads` between them, `__shared__` scratch): each thread of a block is a
//   fiber with its own stack, run until its next barrier, the block's fibers in the
//   schedule's order between barriers (a new order each phase); a block whose threads do not
//   all reach the same barrier (a divergent `__syncthreads`, undefined on a GPU) aborts with
//   the kernel's name. `__shared__` variables are per OS thread, which runs one block at a
//   time: per block, as on a GPU. No warp primitives.
#pragma once

#include <cstdint>
#include <cstring>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>
#if !defined(__x86_64__)
#include <ucontext.h>
#endif

#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__
#define __shared__ static thread_local

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
inline unsigned atomicMax(unsigned* p, unsigned v) {
  unsigned old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
  while (v > old && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
  }
  return old;
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

// ---------------------------------------------------------------------------------------------
// Fibers: the threads of a block-cooperative kernel's block.

// Switches stacks: saves the callee-saved registers and the floating-point control words on
// the current stack, stores its pointer in *from and resumes the stack `to` (x86-64 SysV; other
// machines use ucontext below).
#if defined(__x86_64__)
extern "C" void ctx_shim_switch(void** from, void* to);
extern "C" void ctx_shim_fiber_entry();
__asm__(
    ".text\n"
    ".weak ctx_shim_switch\n"
    ".type ctx_shim_switch,@function\n"
    "ctx_shim_switch:\n"
    "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
    "  subq $8, %rsp\n  stmxcsr (%rsp)\n  fnstcw 4(%rsp)\n"
    "  movq %rsp, (%rdi)\n  movq %rsi, %rsp\n"
    "  ldmxcsr (%rsp)\n  fldcw 4(%rsp)\n  addq $8, %rsp\n"
    "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
    "  ret\n"
    ".weak ctx_shim_fiber_entry\n"
    ".type ctx_shim_fiber_entry,@function\n"
    "ctx_shim_fiber_entry:\n"
    "  movq %r12, %rdi\n  call ctx_shim_fiber_main@PLT\n  ud2\n");
#endif

struct CtxFiber;
// One block being run: its fibers, the scheduler's stack, the kernel.
struct CtxBlock {
  void (*body)(const void*);
  const void* params;
  const char* kernel;
  std::vector<CtxFiber*> fibers;
#if defined(__x86_64__)
  void* sched_sp = nullptr;
#else
  ucontext_t sched;
#endif
  CtxFiber* running = nullptr;
};
struct CtxFiber {
  CtxBlock* block;
  unsigned tid;
  int state;  // 0 runnable, 1 at a barrier, 2 finished
  std::vector<unsigned char> stack;
#if defined(__x86_64__)
  void* sp = nullptr;
#else
  ucontext_t ctx;
#endif
};
inline thread_local CtxBlock* ctx_shim_block = nullptr;
inline thread_local const char* ctx_shim_kernel = nullptr;

inline void ctx_shim_yield(CtxFiber* f) {
#if defined(__x86_64__)
  ctx_shim_switch(&f->sp, f->block->sched_sp);
#else
  swapcontext(&f->ctx, &f->block->sched);
#endif
}

// A fiber's first frame: the kernel, then back to the scheduler for good.
extern "C" __attribute__((weak, used)) void ctx_shim_fiber_main(CtxFiber* f) {
  f->block->body(f->block->params);
  f->state = 2;
  ctx_shim_yield(f);
}
#if !defined(__x86_64__)
inline void ctx_shim_fiber_start(unsigned hi, unsigned lo) {
  ctx_shim_fiber_main((CtxFiber*)(((unsigned long long)hi << 32) | lo));
}
#endif

// A barrier of the block being run: the fiber waits there until every thread of its block has
// come (outside a block-cooperative kernel it is a kernel bug: aborts).
inline void __syncthreads() {
  CtxBlock* b = ctx_shim_block;
  if (b == nullptr || b->running == nullptr) {
    std::fprintf(stderr, "shim: __syncthreads in kernel %s, exported without CTX_EXPORT_BLOCK\n",
                 ctx_shim_kernel ? ctx_shim_kernel : "?");
    std::abort();
  }
  CtxFiber* f = b->running;
  f->state = 1;
  ctx_shim_yield(f);
}

const size_t CTX_FIBER_STACK = 128 * 1024;

// Runs one block of a block-cooperative kernel: every thread a fiber, each phase (the stretch
// between two barriers) run thread by thread in the order of `schedule` (a new permutation each
// phase), until every thread has finished.
inline void ctx_shim_run_block(void (*body)(const void*), const void* params, const char* kernel,
                               unsigned bx, unsigned long long schedule) {
  // The OS thread's fibers (stacks kept between blocks, freed when the thread ends).
  static thread_local std::vector<std::unique_ptr<CtxFiber>> pool;
  while (pool.size() < bx) {
    pool.emplace_back(new CtxFiber());
    pool.back()->stack.resize(CTX_FIBER_STACK);
  }
  CtxBlock b;
  b.body = body;
  b.params = params;
  b.kernel = kernel;
  for (unsigned t = 0; t < bx; ++t) {
    CtxFiber* f = pool[t].get();
    f->block = &b;
    f->tid = t;
    f->state = 0;
#if defined(__x86_64__)
    // A fresh stack: the switch's saved words (control words, six registers, r12 = the fiber)
    // under the entry's address, 16-byte aligned after the `ret` that enters it.
    unsigned long long top = ((unsigned long long)(f->stack.data() + f->stack.size())) & ~15ull;
    unsigned long long* sp = (unsigned long long*)(top - 16) - 8;
    unsigned mx;
    unsigned short cw;
    __asm__ volatile("stmxcsr %0" : "=m"(mx));
    __asm__ volatile("fnstcw %0" : "=m"(cw));
    sp[0] = (unsigned long long)mx | ((unsigned long long)cw << 32);
    sp[1] = 0;                            // r15
    sp[2] = 0;                            // r14
    sp[3] = 0;                            // r13
    sp[4] = (unsigned long long)f;        // r12: the fiber
    sp[5] = 0;                            // rbx
    sp[6] = 0;                            // rbp
    sp[7] = (unsigned long long)&ctx_shim_fiber_entry;
    f->sp = sp;
#else
    getcontext(&f->ctx);
    f->ctx.uc_stack.ss_sp = f->stack.data();
    f->ctx.uc_stack.ss_size = f->stack.size();
    f->ctx.uc_link = nullptr;
    unsigned long long a = (unsigned long long)f;
    makecontext(&f->ctx, (void (*)())ctx_shim_fiber_start, 2, (unsigned)(a >> 32), (unsigned)a);
#endif
    b.fibers.push_back(f);
  }
  CtxBlock* outer = ctx_shim_block;
  ctx_shim_block = &b;
  for (unsigned long long phase = 0;; ++phase) {
    unsigned long long order = schedule <= 1 ? schedule : schedule + 7919 * phase;
    for (unsigned k = 0; k < bx; ++k) {
      CtxFiber* f = b.fibers[ctx_shim_visit(k, bx, order)];
      if (f->state == 2) continue;
      f->state = 0;
      b.running = f;
      threadIdx = uint3{f->tid, 0, 0};
#if defined(__x86_64__)
      ctx_shim_switch(&b.sched_sp, f->sp);
#else
      swapcontext(&b.sched, &f->ctx);
#endif
      b.running = nullptr;
    }
    unsigned done = 0;
    for (CtxFiber* f : b.fibers) done += f->state == 2;
    if (done == bx) break;
    if (done != 0) {
      std::fprintf(stderr,
                   "shim: kernel %s: %u of %u threads of block (%u, %u) finished while the others "
                   "wait at a __syncthreads (a divergent barrier)\n",
                   kernel, done, bx, blockIdx.x, blockIdx.y);
      std::abort();
    }
  }
  ctx_shim_block = outer;
}

// Exports kernel `name` (taking one `const P` by value) as the C function `ctx_shim_<name>`,
// which runs the (block, thread) pairs `first`, `first + stride`, ... of the grid's schedule
// (ctx_shim_visit; 0: blocks x fastest, then y, and in each block its threads in order): the
// whole grid with (0, 1), or one OS thread's share when several run the launch together.
// The opening both exports share: the C entry point's signature, the parameter struct copied
// in, the grid's dimensions and the kernel's name set.
#define CTX_SHIM_ENTRY(name, P)                                                             \
  extern "C" void ctx_shim_##name(unsigned gx, unsigned gy, unsigned bx, const void* params, \
                                  unsigned long long schedule, unsigned long long first,    \
                                  unsigned long long stride) {                              \
    P p;                                                                                    \
    std::memcpy(&p, params, sizeof(P));                                                     \
    gridDim = dim3{gx, gy, 1};                                                              \
    blockDim = dim3{bx, 1, 1};                                                              \
    ctx_shim_kernel = #name;

#define CTX_EXPORT(name, P)                                                                 \
  CTX_SHIM_ENTRY(name, P)                                                                   \
    unsigned long long n = (unsigned long long)gx * gy * bx;                                \
    for (unsigned long long i = first; i < n; i += stride) {                                \
      unsigned long long k = ctx_shim_visit(i, n, schedule);                                \
      threadIdx = uint3{(unsigned)(k % bx), 0, 0};                                          \
      blockIdx = uint3{(unsigned)(k / bx % gx), (unsigned)(k / bx / gx), 0};                \
      name(p);                                                                              \
    }                                                                                       \
  }

// Exports the block-cooperative kernel `name` as `ctx_shim_<name>`: the blocks `first`,
// `first + stride`, ... of the grid's schedule, each run by ctx_shim_run_block.
#define CTX_EXPORT_BLOCK(name, P)                                                           \
  static void ctx_shim_body_##name(const void* params) { name(*(const P*)params); }         \
  CTX_SHIM_ENTRY(name, P)                                                                   \
    unsigned long long n = (unsigned long long)gx * gy;                                     \
    for (unsigned long long i = first; i < n; i += stride) {                                \
      unsigned long long k = ctx_shim_visit(i, n, schedule);                                \
      blockIdx = uint3{(unsigned)(k % gx), (unsigned)(k / gx), 0};                          \
      ctx_shim_run_block(ctx_shim_body_##name, &p, #name, bx, schedule);                    \
    }                                                                                       \
  }
