// NGPU-LM queries on the GPU (004 §2.2; docs/design.md §10). The CPU reference is
// crates/ngpu-lm/src/query.rs, the host code that launches these kernels is
// crates/ngpu-lm/src/cuda.rs.
//
// The LM is the flat arrays of crates/ngpu-lm/src/arrays.rs: per state a label-sorted arc range
// arc_start[s]..arc_start[s + 1], a back-off target and weight, a final weight; state 0 is the
// unigram state whose arc index is the label (every label present). A forest (many boosting
// trees in one set of arrays, crates/ngpu-lm/src/forest.rs) gives each row its root: the
// back-off chain ends there and the root's arcs arc_start[root] + label hold every label; with
// no roots array every row's root is state 0.
//
// Design. 004's Algorithm 1 scatters each level's arcs into the output row, highest level first,
// keeping the first write per label; on a GPU that needs a barrier between levels. Here one
// thread owns one output cell (row, label) and walks the back-off chain for its label: at each
// level a binary search in the state's arc range, adding the back-off weight when the label is
// not there, ending at the unigram state. Each cell is written once, by one thread, with no
// barrier and no atomics (the rule of kernels/README.md), in O(order · log degree) reads; the
// sum is formed in the CPU's order (back-off weights from the highest level down, then the arc
// weight; --fmad=false), so both backends give the same bits.
//
// Launches (grid (blocks, rows), threads stride over the row's cells, any grid width correct):
//   ngpu_advance: every label of each row       -> scores[row * vocab + l], next[row * vocab + l]
//   ngpu_sparse:  K given labels of each row    -> scores[row * k + j],     next[row * k + j]
//   ngpu_final:   grid (blocks, 1), one thread per row -> scores[row] = final weight
//   ngpu_walk:    grid (blocks, 1), one thread per row: the row moves to the next state of its
//                 given label and keeps that label's score (a query walk that never leaves the
//                 device: `ctxbench lm arrays --resident`)

#ifdef CTX_SHIM
#include "shim.h"
#else
#define CTX_EXPORT(name, P)
#endif

typedef unsigned int u32;

struct NgpuQuery {
  // The LM (read only).
  const u32* arc_start;
  const u32* arc_label;
  const float* arc_weight;
  const u32* arc_to;
  const u32* backoff_to;
  const float* backoff_weight;
  const float* final_weight;
  // The batch: one state per row; for ngpu_sparse K labels per row; per row its root (null:
  // state 0 for every row).
  const u32* states;
  const u32* labels;
  const u32* roots;
  // Outputs.
  float* scores;
  u32* next;
  u32 vocab;
  u32 rows;
  u32 k;
  u32 pad;
};

// ln p(label | state) and the next state, along back-offs down to `root` (one thread, one cell).
__device__ __forceinline__ void ngpu_score(const NgpuQuery& p, u32 root, u32 state, u32 label,
                                           float* w, u32* to) {
  u32 s = state;
  float acc = 0.0f;
  while (s != root) {
    u32 lo = p.arc_start[s];
    const u32 end = p.arc_start[s + 1];
    u32 hi = end;
    while (lo < hi) {
      const u32 mid = lo + (hi - lo) / 2u;
      if (p.arc_label[mid] < label) {
        lo = mid + 1u;
      } else {
        hi = mid;
      }
    }
    if (lo < end && p.arc_label[lo] == label) {
      *w = acc + p.arc_weight[lo];
      *to = p.arc_to[lo];
      return;
    }
    acc = acc + p.backoff_weight[s];
    s = p.backoff_to[s];
  }
  const u32 a = p.arc_start[root] + label;
  *w = acc + p.arc_weight[a];
  *to = p.arc_to[a];
}

// Thread: cells (row = blockIdx.y, label l) for l = its global x index, stepping by the grid width.
extern "C" __global__ void ngpu_advance(const NgpuQuery p) {
  const u32 row = blockIdx.y;
  if (row >= p.rows) return;
  const u32 state = p.states[row];
  const u32 root = p.roots ? p.roots[row] : 0u;
  const unsigned long long base = (unsigned long long)row * p.vocab;
  for (u32 l = blockIdx.x * blockDim.x + threadIdx.x; l < p.vocab; l += gridDim.x * blockDim.x) {
    ngpu_score(p, root, state, l, &p.scores[base + l], &p.next[base + l]);
  }
}

// Thread: cells (row = blockIdx.y, candidate j) for j = its global x index, stepping by the grid
// width; the label is labels[row * k + j].
extern "C" __global__ void ngpu_sparse(const NgpuQuery p) {
  const u32 row = blockIdx.y;
  if (row >= p.rows) return;
  const u32 state = p.states[row];
  const u32 root = p.roots ? p.roots[row] : 0u;
  const unsigned long long base = (unsigned long long)row * p.k;
  for (u32 j = blockIdx.x * blockDim.x + threadIdx.x; j < p.k; j += gridDim.x * blockDim.x) {
    ngpu_score(p, root, state, p.labels[base + j], &p.scores[base + j], &p.next[base + j]);
  }
}

// Thread: rows r = its global x index, stepping by the grid width: scores[r] = final weight.
extern "C" __global__ void ngpu_final(const NgpuQuery p) {
  for (u32 r = blockIdx.x * blockDim.x + threadIdx.x; r < p.rows; r += gridDim.x * blockDim.x) {
    p.scores[r] = p.final_weight[p.states[r]];
  }
}

// One step of a walk over advance's outputs: per row its label this step, the state it moves
// to and the score it picked (the host reads the picked scores once, after the last step).
struct NgpuWalk {
  u32* states;
  const u32* labels;
  const float* scores;
  const u32* next;
  float* picked;
  u32 vocab;
  u32 rows;
};

// Thread: rows r = its global x index, stepping by the grid width.
extern "C" __global__ void ngpu_walk(const NgpuWalk p) {
  for (u32 r = blockIdx.x * blockDim.x + threadIdx.x; r < p.rows; r += gridDim.x * blockDim.x) {
    const unsigned long long c = (unsigned long long)r * p.vocab + p.labels[r];
    p.picked[r] = p.scores[c];
    p.states[r] = p.next[c];
  }
}

CTX_EXPORT(ngpu_advance, NgpuQuery)
CTX_EXPORT(ngpu_walk, NgpuWalk)
CTX_EXPORT(ngpu_sparse, NgpuQuery)
CTX_EXPORT(ngpu_final, NgpuQuery)
