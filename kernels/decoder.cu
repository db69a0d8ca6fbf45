// The frame step of the wfst-search engine on the GPU, for a batch of lanes (docs/design.md §4, §10;
// the CPU reference is crates/wfst-search/src/search/ (mod.rs, expand.rs, closure.rs), the
// host code that launches these kernels is crates/wfst-search/src/cuda/).
//
// The design of Kaldi's cudadecoder: the counts stay on the device. Every queue size, cutoff,
// best cost and overflow flag of a frame lives in device memory; the host launches a fixed
// sequence of five kernels per frame step whose grids do not depend on any count, and reads
// the step back once at its end (a header of per-lane counts and flags, then the packed tokens
// and links). A lane that needs more room than its buffers have sets its overflow flag and the
// sizes it needs, stops, and the host replays the step with grown buffers.
//
// One frame step, in launch order (host: wfst-search/src/cuda/step.rs):
//   emit_begin   (one block per lane)  counters reset; best expandable token; the early bound;
//                                      emitting degrees and their scan (enumeration offsets)
//   expand       (blocks × lanes)      every enumerated emitting arc offers its cost to its
//                                      destination's slot (atomics only)
//   frame_finish (one block per lane)  beam cutoff, survivors numbered, back-pointers and
//                                      emitting links; the ε-closure in rounds until the lane's
//                                      frontier is empty (an ε cycle is caught by a pop budget);
//                                      ε links
//   pack_offsets (one block)           every lane's place in the packed output; the header
//   gather_out   (blocks × lanes)      tokens and links packed for one copy; slots cleared
//
// Block-cooperative kernels (`CTX_EXPORT_BLOCK`) walk a lane's phases with `__syncthreads`
// between them: what a thread reads after a barrier was written before it, by any thread of
// the block. Every other kernel's threads meet only through atomics whose outcome does not
// depend on the order. Both kinds run on the CPU shim (kernels/shim.h: block threads as
// fibers), in order, reversed or shuffled.
//
// Layout. Every kernel takes the same `Frame` by value; between steps only the score row's
// address and the frontier buffers (swapped each step) change. Per-lane arrays are
// lane-major with a fixed stride (`tok_cap`, `arc_cap`, `state_stride`); per-lane scalars are
// indexed by lane; the step's per-lane inputs (active flag, frontier size, expand cut) come in
// one upload, `lane_in`.
//
// Costs are computed with the CPU's formula in the CPU's order (compile with --fmad=false: no
// FMA contraction). Recombination keys pack an order-preserving image of the cost above the arc
// index, so one 64-bit atomicMin keeps the cheaper token and, on equal cost, the smaller arc —
// the CPU's tie rule; negative costs (boosting) order correctly, and −0.0 is folded into +0.0 as
// the CPU's `<` sees them equal. Token numbers follow the CPU's discovery order: an emitting
// token is numbered by the first (token, arc) enumeration index that reached it within the
// bound, an ε token by its first relaxation in its closure round.
//
// Open-vocabulary contexts (the CPU layout of crates/wfst-search/src/context.rs). A
// lane may follow a context graph of the batch's pool: its context state c with return index
// ri is search state N + ri·M + c (per-state arrays have `state_stride` entries per lane), its
// arc a is arc id A + a, the exit of final state c is A + arcs + c. A slot arc of the main graph
// (output `slot_word`) enters the context when it is one of the entry arcs and the lane has a
// context, and is never followed otherwise (its uploaded weight is +∞). The expansion
// enumerates a context lane's previous tokens twice (`n_items` = 2 · n_prev): main-graph tokens
// first, then context tokens — the CPU's order, which numbers the tokens.

#ifdef CTX_SHIM
#include "shim.h"
#define CTX_FMIN fminf_
#else
#define CTX_EXPORT(name, P)
#define CTX_EXPORT_BLOCK(name, P)
#define CTX_FMIN fminf
#endif

typedef unsigned int u32;
typedef unsigned long long u64;

#define NONE 0xffffffffu
#define KEY_NONE 0xffffffffffffffffull
#define HISTOGRAM_BINS 256u
// Words per lane of `lane_in`: active, n_prev, n_items, continue (1: n_prev and the cut are
// those the lane's last frame left on the device, n_items follows from them), then the expand
// cut's best, width, bins (as float, −1: no max-active cut) and cutoff (float bits).
#define LANE_IN 8u
// The packed output's header: HDR0 words (total tokens, total links, 0, 0), then HDR words per
// lane: status, tokens, links, emitting links, cutoff (bits), token offset, link offset, the
// tokens, arcs and links it needs (after an overflow), arcs relaxed, closure rounds.
#define HDR0 4u
#define HDR 12u
// Lane status bits.
#define ST_OVERFLOW 1u
#define ST_NO_SURVIVORS 2u
#define ST_EPS_CYCLE 4u
// The most threads a block-cooperative kernel's block may have (its shared scan array).
#define CTA_MAX 1024u

struct Frame {
  // Graph (shared by all lanes): CSR offsets, per-arc arrays, the source state of every arc.
  const u32* e_off;
  const u32* ne_off;
  const u32* ilabel;
  const float* weight;
  const u32* next;
  const u32* src;
  const u32* olabel;
  // The step's scores: lane l's row at rows + l · cols.
  const float* rows;
  // Booster: per lane a sorted arc list at boost_off[l], boost_len[l] entries, discount.
  const u32* boost_arcs;
  const u32* boost_off;
  const u32* boost_len;
  const float* boost_discount;
  // Word boosting: per lane a sorted word list at word_off[l], word_len[l] entries, with a
  // cost per word (on the graph's output labels).
  const u32* word_ids;
  const float* word_cost;
  const u32* word_off;
  const u32* word_len;
  // The step's per-lane inputs from the host (LANE_IN words per lane), and the ones in force
  // (the same, or with word 3 set: the frontier size and expand cut the lane's last frame left
  // on the device), and that cut: 4 words per lane (best, width, bins, cutoff as in lane_in).
  const u32* lane_in;
  u32* lane_cur;
  u32* next_cut;
  // Per-lane scalars the step computes.
  u32* status;  // ST_* bits
  u32* need;    // 3 per lane: tokens, arcs, links a lane needed when it overflowed
  u32* work;    // 2 per lane: arcs relaxed, closure rounds
  u64* best_key;
  float* bound;
  u32* n_exp;
  u32* emit_min;
  float* cutoff;
  u32* n_touched;
  u32* n_tok;
  u32* n_new;
  u32* n_link_e;
  u32* n_link;
  // Previous frame's tokens (stride tok_cap).
  const u32* p_state;
  const float* p_cost;
  // This frame's tokens (stride tok_cap).
  u32* c_state;
  float* c_cost;
  u32* c_bpsrc;
  u32* c_bparc;
  // Closure frontier (stride tok_cap).
  u32* fr_tok;
  float* fr_cost;
  // Per-state slots (stride state_stride): recombination key, first discovery, token number.
  u64* slot;
  u32* first;
  u32* map;
  // Per-enumeration scratch (stride arc_cap).
  float* e_gc;
  float* e_ac;
  u32* e_ok;
  u32* flags;
  u32* touched;
  // Enumeration offsets of the current phase (stride eoff_stride) and compaction positions
  // (stride arc_cap + 1); scan inputs (stride sx_stride).
  u32* eoff;
  u32* pos;
  u32* sx;
  // Lattice links (stride link_cap).
  u32* l_src;
  u32* l_dst;
  u32* l_arc;
  float* l_graph;
  float* l_ac;
  // Scratch of pack_offsets (4 · (lanes + 1) words) and the packed output: the header, then
  // tokens (state, cost, back-pointer source, back-pointer arc: T each) and links (source,
  // destination, arc, graph cost, acoustic cost: K each), T and K the totals of every lane.
  u32* lane_scan;
  u32* out;
  // Open-vocabulary contexts: the batch's context graphs in one pool (per graph, state arrays
  // of M + 1 entries from its state base — CSR offsets local to its arcs, final costs — and arc
  // arrays from its arc base); per lane LANE_CTX words (see `Ctx`); the main graph's entry slot
  // arcs (sorted ids, their weights and return indices) and return states.
  const u32* x_e_off;
  const u32* x_ne_off;
  const float* x_final;
  const u32* x_ilabel;
  const float* x_weight;
  const u32* x_next;
  const u32* x_src;
  const u32* lane_ctx;
  const u32* entry_arc;
  const float* entry_weight;
  const u32* entry_ri;
  const u32* returns;
  // Sizes.
  u32 num_states;
  u32 cols;
  u32 tok_cap;
  u32 arc_cap;
  u32 link_cap;
  u32 sx_stride;
  u32 lanes;
  u32 state_stride;  // per-lane per-state arrays: N main states, then the context states
  u32 eoff_stride;   // enumeration offsets per lane (2 · tok_cap + 1)
  u32 a_main;        // A: the main graph's arcs
  u32 slot_word;     // the class slot's output label (NONE without a slot)
  u32 n_entries;
  u32 n_returns;
  u32 lattice;       // 1: record lattice links
  u32 unused;
  float beam;
  float scale;
  u32 max_active;    // the expand cut's token budget (search `finish_frame`)
};

// ---------------------------------------------------------------------------------------------
// Helpers.

// Order-preserving image of a cost: unsigned comparison of images = float comparison of costs
// (negative costs included; Kaldi casts the signed key to u32, which orders them wrongly).
__device__ __forceinline__ u32 ord_bits(float c) {
  if (c == 0.0f) c = 0.0f;  // −0.0 and +0.0 are one cost
  u32 b = __float_as_uint(c);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
__device__ __forceinline__ float from_ord(u32 o) {
  u32 b = (o & 0x80000000u) ? (o & 0x7fffffffu) : ~o;
  return __uint_as_float(b);
}
__device__ __forceinline__ float CTX_INF() { return __uint_as_float(0x7f800000u); }
__device__ __forceinline__ u64 pack(float c, u32 idx) { return ((u64)ord_bits(c) << 32) | idx; }
__device__ __forceinline__ float key_cost(u64 k) { return from_ord((u32)(k >> 32)); }
__device__ __forceinline__ u32 key_idx(u64 k) { return (u32)(k & 0xffffffffull); }

// The histogram bin of `cost` (search `histogram_bin`: truncation, saturating at the top bin).
__device__ __forceinline__ u32 histogram_bin(float cost, float best, float width) {
  if (width <= 0.0f) return 0;
  float q = (cost - best) / width;
  if (!(q > 0.0f)) return 0;  // negative or NaN: Rust's `as u32` gives 0
  if (q >= (float)HISTOGRAM_BINS) return HISTOGRAM_BINS - 1;
  return (u32)q;
}

// Whether a previous-frame token of cost `c` is expanded (search `ExpandCut::keeps`).
__device__ __forceinline__ bool keeps(const Frame& p, u32 l, float c) {
  const float* k = (const float*)(p.lane_cur + LANE_IN * l) + 4;
  float bins = k[2];
  if (bins < 0.0f) return c <= k[3];  // no max-active cut: the beam cutoff
  return (float)histogram_bin(c, k[0], k[1]) < bins;
}

// The booster's delta of arc `a` for lane `l` (a lane has an arc set or a word table, not
// both): with a word table, the cost of the arc's output word when listed (binary search);
// with an arc set, the discount when `a` is in the lane's sorted list; else −0.0, which adds
// nothing, like the CPU's unboosted delta.
__device__ __forceinline__ float boost_delta(const Frame& p, u32 l, u32 a) {
  u32 wn = p.word_len[l];
  if (wn != 0) {
    u32 w = p.olabel[a];
    if (w == 0) return -0.0f;
    const u32* v = p.word_ids + p.word_off[l];
    u32 lo = 0, hi = wn;
    while (lo < hi) {
      u32 mid = (lo + hi) >> 1;
      if (v[mid] < w) lo = mid + 1; else hi = mid;
    }
    return (lo < wn && v[lo] == w) ? p.word_cost[p.word_off[l] + lo] : -0.0f;
  }
  u32 n = p.boost_len[l];
  if (n == 0) return -0.0f;
  const u32* v = p.boost_arcs + p.boost_off[l];
  u32 lo = 0, hi = n;
  while (lo < hi) {
    u32 mid = (lo + hi) >> 1;
    if (v[mid] < a) lo = mid + 1; else hi = mid;
  }
  return (lo < n && v[lo] == a) ? p.boost_discount[l] : -0.0f;
}

// The largest i < n with off[i] <= e: the item owning enumeration index e (items of degree 0
// share their offset with the next item, and the largest index is the one that owns e).
__device__ __forceinline__ u32 owner(const u32* off, u32 n, u32 e) {
  u32 lo = 0, hi = n;  // answer in [lo, hi)
  while (hi - lo > 1) {
    u32 mid = (lo + hi) >> 1;
    if (off[mid] <= e) lo = mid; else hi = mid;
  }
  return lo;
}

#define LANE_CTX 8u

// A lane's context: M states (0: none), its graph's state and arc bases in the pool, its arcs,
// emitting arcs and start state.
struct Ctx {
  u32 m, sbase, abase, narcs, nemit, start;
};
__device__ __forceinline__ Ctx lane_ctx(const Frame& p, u32 l) {
  const u32* c = p.lane_ctx + LANE_CTX * l;
  Ctx x;
  x.m = c[0];
  x.sbase = c[1];
  x.abase = c[2];
  x.narcs = c[3];
  x.nemit = c[4];
  x.start = c[5];
  return x;
}

__device__ __forceinline__ bool finite_cost(float f) {
  return (__float_as_uint(f) & 0x7f800000u) != 0x7f800000u;
}

// An arc or step as the search sees it: arc id, input label (0 for ε), graph cost (with the
// booster's delta), destination search state.
struct Step {
  u32 id, il;
  float gc;
  u32 dst;
};

// Emitting degree of search state s.
__device__ __forceinline__ u32 emit_degree(const Frame& p, u32 l, u32 s) {
  if (s < p.num_states) return p.e_off[s + 1] - p.e_off[s];
  Ctx x = lane_ctx(p, l);
  u32 c = (s - p.num_states) % x.m;
  return p.x_e_off[x.sbase + c + 1] - p.x_e_off[x.sbase + c];
}

// Emitting arc j of search state s: a main arc with the booster's delta, or a context arc
// (no delta) to the context state of the same return index.
__device__ __forceinline__ Step emit_step(const Frame& p, u32 l, u32 s, u32 j) {
  Step st;
  if (s < p.num_states) {
    u32 a = p.e_off[s] + j;
    st.id = a;
    st.il = p.ilabel[a];
    st.gc = p.weight[a] + boost_delta(p, l, a);
    st.dst = p.next[a];
    return st;
  }
  Ctx x = lane_ctx(p, l);
  u32 v = s - p.num_states, ri = v / x.m, c = v % x.m;
  u32 la = p.x_e_off[x.sbase + c] + j;
  st.id = p.a_main + la;
  st.il = p.x_ilabel[x.abase + la];
  st.gc = p.x_weight[x.abase + la] + -0.0f;
  st.dst = p.num_states + ri * x.m + p.x_next[x.abase + la];
  return st;
}

// ε degree of search state s: a main state's ε arcs (slot arcs included: they are skipped
// when relaxed), a context state's ε arcs plus its exit when it completes a phrase.
__device__ __forceinline__ u32 eps_degree(const Frame& p, u32 l, u32 s) {
  if (s < p.num_states) return p.ne_off[s + 1] - p.ne_off[s];
  Ctx x = lane_ctx(p, l);
  u32 c = (s - p.num_states) % x.m;
  return p.x_ne_off[x.sbase + c + 1] - p.x_ne_off[x.sbase + c] +
         (finite_cost(p.x_final[x.sbase + c]) ? 1u : 0u);
}

// The return index of main state r (a slot arc's destination; binary search).
__device__ __forceinline__ u32 return_index(const Frame& p, u32 r) {
  u32 lo = 0, hi = p.n_returns;
  while (lo < hi) {
    u32 mid = (lo + hi) >> 1;
    if (p.returns[mid] < r) lo = mid + 1; else hi = mid;
  }
  return lo;
}

// ε step j of search state s (search `closure`): a main ε arc with the booster's delta; a
// slot arc — into the context's start state at the arc's weight when the lane has a context
// and the arc is an entry, else not taken (cost +∞); a context ε arc; a context state's exit
// to its return state at its final cost.
__device__ __forceinline__ Step eps_step(const Frame& p, u32 l, u32 s, u32 j) {
  Step st;
  st.il = 0;
  if (s < p.num_states) {
    u32 a = p.ne_off[s] + j;
    st.id = a;
    st.dst = p.next[a];
    if (p.olabel[a] != p.slot_word) {
      st.gc = p.weight[a] + boost_delta(p, l, a);
      return st;
    }
    st.gc = CTX_INF();
    Ctx x = lane_ctx(p, l);
    if (x.m == 0) return st;
    u32 lo = 0, hi = p.n_entries;
    while (lo < hi) {
      u32 mid = (lo + hi) >> 1;
      if (p.entry_arc[mid] < a) lo = mid + 1; else hi = mid;
    }
    if (lo < p.n_entries && p.entry_arc[lo] == a) {
      st.gc = p.entry_weight[lo];
      st.dst = p.num_states + p.entry_ri[lo] * x.m + x.start;
    }
    return st;
  }
  Ctx x = lane_ctx(p, l);
  u32 v = s - p.num_states, ri = v / x.m, c = v % x.m;
  u32 lo = p.x_ne_off[x.sbase + c], n = p.x_ne_off[x.sbase + c + 1] - lo;
  if (j < n) {
    u32 la = lo + j;
    st.id = p.a_main + la;
    st.gc = p.x_weight[x.abase + la];
    st.dst = p.num_states + ri * x.m + p.x_next[x.abase + la];
  } else {
    st.id = p.a_main + x.narcs + c;
    st.gc = p.x_final[x.sbase + c];
    st.dst = p.returns[ri];
  }
  return st;
}

// Whether arc id a (into search state d) is an ε step, and its source search state: a main ε
// arc's source; a context ε arc's source in d's return index; an exit's final state in the
// return index of d.
__device__ __forceinline__ bool eps_source(const Frame& p, u32 l, u32 a, u32 d, u32* src) {
  if (a < p.a_main) {
    *src = p.src[a];
    return a >= p.e_off[p.num_states];
  }
  Ctx x = lane_ctx(p, l);
  u32 la = a - p.a_main;
  if (la < x.nemit) return false;
  if (la < x.narcs) {
    u32 ri = (d - p.num_states) / x.m;
    *src = p.num_states + ri * x.m + p.x_src[x.abase + la];
  } else {
    *src = p.num_states + return_index(p, d) * x.m + (la - x.narcs);
  }
  return true;
}

// Enumeration index i of the expansion: its previous-frame token (*t) and emitting step. With
// a context the lane's items are its tokens twice: main-graph tokens' arcs first, then
// context tokens' (degrees_emit gives each token its arcs in one of the two passes).
__device__ __forceinline__ Step emit_arc(const Frame& p, u32 l, u32 i, u32* t) {
  const u32* off = p.eoff + (u64)l * p.eoff_stride;
  u32 k = owner(off, p.lane_cur[LANE_IN * l + 2], i);
  u32 n = p.lane_cur[LANE_IN * l + 1];
  *t = k < n ? k : k - n;
  u32 s = p.p_state[(u64)l * p.tok_cap + *t];
  return emit_step(p, l, s, i - off[k]);
}

// Enumeration index i over the ε steps of n items of this frame (item k is token toks[k], or
// token k when toks is null): the item (*k) and its ε step.
__device__ __forceinline__ Step eps_arc(const Frame& p, u32 l, u32 i, u32 n, const u32* toks,
                                        u32* k) {
  const u32* off = p.eoff + (u64)l * p.eoff_stride;
  *k = owner(off, n, i);
  u32 u = toks ? toks[*k] : *k;
  u32 s = p.c_state[(u64)l * p.tok_cap + u];
  return eps_step(p, l, s, i - off[*k]);
}

// The lane's step inputs.
__device__ __forceinline__ bool lane_active(const Frame& p, u32 l) {
  return p.lane_in[LANE_IN * l] != 0;
}
// Whether lane l runs this step and has not stopped (overflow, error).
__device__ __forceinline__ bool lane_on(const Frame& p, u32 l) {
  return lane_active(p, l) && p.status[l] == 0;
}

// A kernel whose threads stride over `count` items of lane blockIdx.y, any number of blocks.
#define LANE_LOOP(count)                                                   \
  const u32 l = blockIdx.y;                                                \
  if (!lane_on(p, l)) return;                                              \
  const u32 n_items = (count);                                             \
  for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < n_items;         \
       i += gridDim.x * blockDim.x)

// Inside a block-cooperative kernel: the block's threads stride over n items.
#define CTA_LOOP(i, n) for (u32 i = threadIdx.x; i < (n); i += blockDim.x)

// ---------------------------------------------------------------------------------------------
// Block primitives (every thread of the block calls them: they hold barriers).

// Exclusive prefix sums of x[0..n) into y[0..n), y[n] = the total, which every thread gets
// back. Thread k sums its own run of ⌈n / blockDim⌉ consecutive items, the block scans the
// runs' sums in shared memory (Hillis–Steele), then each thread writes its run's prefixes.
// Starts with a barrier (x may have been written by any thread of the block) and ends with one
// (y is read by any thread after it).
__device__ u32 cta_scan(const u32* x, u32* y, u32 n) {
  __shared__ u32 sh[CTA_MAX];
  __shared__ u32 total;
  const u32 bd = blockDim.x, k = threadIdx.x;
  __syncthreads();
  const u32 per = (n + bd - 1) / bd;
  u32 a = k * per;
  if (a > n) a = n;
  u32 b = a + per;
  if (b > n) b = n;
  u32 s = 0;
  for (u32 i = a; i < b; ++i) s += x[i];
  sh[k] = s;
  __syncthreads();
  for (u32 off = 1; off < bd; off <<= 1) {
    u32 v = k >= off ? sh[k - off] : 0;
    __syncthreads();
    sh[k] += v;
    __syncthreads();
  }
  u32 run = sh[k] - s;
  for (u32 i = a; i < b; ++i) {
    u32 v = x[i];
    y[i] = run;
    run += v;
  }
  if (k == bd - 1) {
    y[n] = sh[k];
    total = sh[k];
  }
  __syncthreads();
  const u32 t = total;
  __syncthreads();
  return t;
}

// Thread 0 records that lane l overflowed `what` (0 tokens, 1 arcs, 2 links) needing `n`.
__device__ __forceinline__ void overflow(const Frame& p, u32 l, u32 what, u32 n) {
  if (threadIdx.x != 0) return;
  p.status[l] |= ST_OVERFLOW;
  p.need[3 * l + what] = n;
}

// ---------------------------------------------------------------------------------------------
// emit_begin: one block per lane (grid (1, lanes)).
//
// Thread 0 resets the lane's counters. Every thread offers the best expandable token among its
// previous tokens (cost, index: ties to the smaller index, the CPU's `min_by`) to the block's
// minimum; then its share of that token's emitting arcs to the early bound (min of the
// candidate costs, NaN ignored as `f32::min` does, plus the beam: search `bound = ub +
// beam`); then the emitting degree of its enumeration items (with a context each token twice,
// main pass then context pass; 0 for a token not expanded in this pass), scanned into the
// enumeration offsets. An enumeration larger than the arc buffers is an overflow.
extern "C" __global__ void emit_begin(const Frame p) {
  const u32 l = blockIdx.y, k = threadIdx.x;
  if (!lane_active(p, l)) return;
  __shared__ u64 best;
  __shared__ u32 ub;
  if (k == 0) {
    // The inputs in force: the host's, or the lane's last frame's (its tokens, twice with a
    // context, and the expand cut frame_finish left).
    const u32* in = p.lane_in + LANE_IN * l;
    u32* cur = p.lane_cur + LANE_IN * l;
    if (in[3]) {
      u32 n = p.n_tok[l];
      cur[0] = 1;
      cur[1] = n;
      cur[2] = p.lane_ctx[LANE_CTX * l] != 0 ? 2 * n : n;
      cur[3] = 1;
      for (u32 j = 0; j < 4; ++j) cur[4 + j] = p.next_cut[4 * l + j];
    } else {
      for (u32 j = 0; j < LANE_IN; ++j) cur[j] = in[j];
    }
    best = KEY_NONE;
    ub = ord_bits(CTX_INF());
    p.status[l] = 0;
    p.need[3 * l] = p.need[3 * l + 1] = p.need[3 * l + 2] = 0;
    p.work[2 * l] = p.work[2 * l + 1] = 0;
    p.emit_min[l] = NONE;
    p.n_touched[l] = 0;
    p.n_tok[l] = 0;
    p.n_new[l] = 0;
    p.n_link_e[l] = 0;
    p.n_link[l] = 0;
  }
  __syncthreads();
  const u32 n_prev = p.lane_cur[LANE_IN * l + 1], n_items = p.lane_cur[LANE_IN * l + 2];
  if (n_items > p.sx_stride) {
    // The enumeration's scan input (arc-sized) cannot hold the items.
    overflow(p, l, 1, n_items);
    return;
  }
  u64 mine = KEY_NONE;
  CTA_LOOP(i, n_prev) {
    float c = p.p_cost[(u64)l * p.tok_cap + i];
    if (keeps(p, l, c)) {
      u64 key = pack(c, i);
      if (key < mine) mine = key;
    }
  }
  if (mine != KEY_NONE) atomicMin(&best, mine);
  __syncthreads();
  const u64 bk = best;
  if (bk != KEY_NONE) {
    u32 i = key_idx(bk);
    u32 s = p.p_state[(u64)l * p.tok_cap + i];
    float cost = p.p_cost[(u64)l * p.tok_cap + i];
    const float* row = p.rows + (u64)l * p.cols;
    float m = CTX_INF();
    CTA_LOOP(j, emit_degree(p, l, s)) {
      Step st = emit_step(p, l, s, j);
      float ac = -p.scale * row[st.il - 1];
      m = CTX_FMIN(m, cost + st.gc + ac);
    }
    if (m < CTX_INF()) atomicMin(&ub, ord_bits(m));
  }
  __syncthreads();
  if (k == 0) p.bound[l] = from_ord(ub) + p.beam;
  u32* sx = p.sx + (u64)l * p.sx_stride;
  CTA_LOOP(i, n_items) {
    u32 pass = i >= n_prev;
    u64 t = (u64)l * p.tok_cap + (pass ? i - n_prev : i);
    u32 s = p.p_state[t];
    bool here = (s >= p.num_states) == (pass != 0);
    sx[i] = here && keeps(p, l, p.p_cost[t]) ? emit_degree(p, l, s) : 0;
  }
  const u32 n_exp = cta_scan(sx, p.eoff + (u64)l * p.eoff_stride, n_items);
  if (k == 0) {
    p.n_exp[l] = n_exp;
    p.work[2 * l] = n_exp;
  }
  if (n_exp > p.arc_cap) overflow(p, l, 1, n_exp);
}

// ---------------------------------------------------------------------------------------------
// expand: grid (blocks, lanes), threads striding over the lane's enumerated emitting arcs.
//
// One thread per enumerated emitting arc e (token t = owner of e, its arc): the candidate cost
// `(cost + (weight + delta)) + (−scale · loglik)`; within the bound, the arc offers (cost, arc
// id) to its destination's slot and e to the destination's first discovery; the first thread
// to reach a destination appends it to the lane's touched list (order irrelevant).
extern "C" __global__ void expand(const Frame p) {
  LANE_LOOP(p.n_exp[l]) {
    u32 t;
    Step st = emit_arc(p, l, i, &t);
    float gc = st.gc;
    float ac = -p.scale * p.rows[(u64)l * p.cols + st.il - 1];
    float c = p.p_cost[(u64)l * p.tok_cap + t] + gc + ac;
    u64 e = (u64)l * p.arc_cap + i;
    p.e_gc[e] = gc;
    p.e_ac[e] = ac;
    p.flags[e] = 0;
    bool ok = c <= p.bound[l];
    p.e_ok[e] = ok;
    if (ok) {
      u32 d = st.dst;
      u64 sl = (u64)l * p.state_stride + d;
      atomicMin(&p.slot[sl], pack(c, st.id));
      if (atomicMin(&p.first[sl], i) == NONE) {
        p.touched[(u64)l * p.arc_cap + atomicAdd(&p.n_touched[l], 1u)] = d;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// frame_finish: one block per lane (grid (1, lanes)): the rest of the frame, phase by phase.

// The next closure round's frontier: the lane's tokens flagged in sx (ntok of them), at their
// ranks, with their current costs (the snapshot the round relaxes from). Returns its size.
__device__ u32 write_frontier(const Frame& p, u32 l, u32 ntok, const u32* sx, u32* pos) {
  const u32 nf = cta_scan(sx, pos, ntok);
  CTA_LOOP(i, ntok) {
    if (!sx[i]) continue;
    u32 f = pos[i];
    p.fr_tok[(u64)l * p.tok_cap + f] = i;
    p.fr_cost[(u64)l * p.tok_cap + f] = p.c_cost[(u64)l * p.tok_cap + i];
  }
  __syncthreads();
  return nf;
}

// The emitting half. No touched state: the lane has no survivors (an error the host reports).
// Else the cutoff is the best emitting cost + beam; a touched state within it flags its first
// discovery, one outside has its slot cleared (the CPU drops the token); the flags' scan
// numbers the survivors in discovery order; each survivor gets its number, state and map
// entry. Then each enumerated arc within the bound whose destination survived: the winner of
// the destination's slot records its source token as the back-pointer; the arc is a lattice
// link when its cost is within the cutoff (compacted in enumeration order). Last, each token's
// cost and back-pointer arc from its slot, and round 0's ε frontier: the tokens whose state
// has ε arcs, with their costs (the snapshot the round relaxes from). Returns false when the
// lane stopped.
__device__ bool finish_emitting(const Frame& p, u32 l, u32& ntok, u32& nf) {
  const u32 k = threadIdx.x;
  const u32 nt = p.n_touched[l], n_exp = p.n_exp[l];
  if (nt == 0) {
    if (k == 0) p.status[l] |= ST_NO_SURVIVORS;
    return false;
  }
  const u32* touched = p.touched + (u64)l * p.arc_cap;
  u32* flags = p.flags + (u64)l * p.arc_cap;
  u32* pos = p.pos + (u64)l * (p.arc_cap + 1);
  u64* slot = p.slot + (u64)l * p.state_stride;
  u32 m = NONE;
  CTA_LOOP(i, nt) {
    u32 o = ord_bits(key_cost(slot[touched[i]]));
    if (o < m) m = o;
  }
  if (m != NONE) atomicMin(&p.emit_min[l], m);
  __syncthreads();
  const float cut = from_ord(p.emit_min[l]) + p.beam;
  if (k == 0) p.cutoff[l] = cut;
  CTA_LOOP(i, nt) {
    u32 d = touched[i];
    if (key_cost(slot[d]) <= cut) {
      flags[p.first[(u64)l * p.state_stride + d]] = 1;
    } else {
      slot[d] = KEY_NONE;
      p.first[(u64)l * p.state_stride + d] = NONE;
    }
  }
  ntok = cta_scan(flags, pos, n_exp);
  if (ntok > p.tok_cap) {
    overflow(p, l, 0, ntok);
    return false;
  }
  CTA_LOOP(i, nt) {
    u32 d = touched[i];
    u64 sl = (u64)l * p.state_stride + d;
    u32 f = p.first[sl];
    if (f == NONE) continue;
    u32 j = pos[f];
    p.map[sl] = j;
    p.c_state[(u64)l * p.tok_cap + j] = d;
    p.first[sl] = NONE;
  }
  __syncthreads();
  CTA_LOOP(i, n_exp) {
    u64 e = (u64)l * p.arc_cap + i;
    flags[i] = 0;
    if (!p.e_ok[e]) continue;
    u32 t;
    Step st = emit_arc(p, l, i, &t);
    u64 sl = (u64)l * p.state_stride + st.dst;
    u32 j = p.map[sl];
    if (j == NONE) continue;
    float c = p.p_cost[(u64)l * p.tok_cap + t] + p.e_gc[e] + p.e_ac[e];
    if (slot[st.dst] == pack(c, st.id)) p.c_bpsrc[(u64)l * p.tok_cap + j] = t;
    if (c <= cut) flags[i] = 1;
  }
  if (p.lattice) {
    const u32 nle = cta_scan(flags, pos, n_exp);
    if (nle > p.link_cap) {
      overflow(p, l, 2, nle);
      return false;
    }
    CTA_LOOP(i, n_exp) {
      u64 e = (u64)l * p.arc_cap + i;
      if (!flags[i]) continue;
      u32 t;
      Step st = emit_arc(p, l, i, &t);
      u64 o = (u64)l * p.link_cap + pos[i];
      p.l_src[o] = t;
      p.l_dst[o] = p.map[(u64)l * p.state_stride + st.dst];
      p.l_arc[o] = st.id;
      p.l_graph[o] = p.e_gc[e];
      p.l_ac[o] = p.e_ac[e];
    }
    if (k == 0) p.n_link_e[l] = p.n_link[l] = nle;
  }
  u32* sx = p.sx + (u64)l * p.sx_stride;
  CTA_LOOP(i, ntok) {
    u64 t = (u64)l * p.tok_cap + i;
    u32 d = p.c_state[t];
    u64 key = slot[d];
    p.c_cost[t] = key_cost(key);
    p.c_bparc[t] = key_idx(key);
    sx[i] = eps_degree(p, l, d) > 0;
  }
  nf = write_frontier(p, l, ntok, sx, pos);
  return true;
}

// One ε-closure round (search `closure`) of a lane's `nf` frontier entries: their ε
// degrees scanned into enumeration offsets; each enumerated ε arc (entry f = owner, its arc)
// takes the cost from the entry's snapshot `cost + (weight + delta)`; within the cutoff it
// offers (cost, arc id) to its destination's slot, and a destination without a token records
// its first discovery (the first thread there appends it to the round's new list). The new
// states are numbered after the existing tokens in discovery order (cost +∞, so that the
// update sees them improved). Each token then takes its cost and back-pointer from its slot
// (an ε arc's source token found through the map); a token whose cost went down and whose
// state has ε arcs joins the next frontier (a tie on cost only moves the back-pointer, as on
// the CPU). Returns the next frontier's size, or NONE when the lane stopped.
__device__ u32 closure_round(const Frame& p, u32 l, u32& ntok, u32 nf, float cut) {
  const u32 k = threadIdx.x;
  u32* sx = p.sx + (u64)l * p.sx_stride;
  u32* eoff = p.eoff + (u64)l * p.eoff_stride;
  u32* flags = p.flags + (u64)l * p.arc_cap;
  u32* pos = p.pos + (u64)l * (p.arc_cap + 1);
  u32* touched = p.touched + (u64)l * p.arc_cap;
  const u32* fr = p.fr_tok + (u64)l * p.tok_cap;
  CTA_LOOP(i, nf) sx[i] = eps_degree(p, l, p.c_state[(u64)l * p.tok_cap + fr[i]]);
  const u32 nfe = cta_scan(sx, eoff, nf);
  if (nfe > p.arc_cap) {
    overflow(p, l, 1, nfe);
    return NONE;
  }
  if (k == 0) {
    p.work[2 * l] += nfe;
    p.work[2 * l + 1] += 1;
  }
  CTA_LOOP(i, nfe) {
    flags[i] = 0;
    u32 f;
    Step st = eps_arc(p, l, i, nf, fr, &f);
    float c = p.fr_cost[(u64)l * p.tok_cap + f] + st.gc;
    if (c > cut) continue;
    u32 d = st.dst;
    u64 sl = (u64)l * p.state_stride + d;
    atomicMin(&p.slot[sl], pack(c, st.id));
    if (p.map[sl] == NONE && atomicMin(&p.first[sl], i) == NONE) {
      touched[atomicAdd(&p.n_new[l], 1u)] = d;
    }
  }
  __syncthreads();
  const u32 nn = p.n_new[l];
  CTA_LOOP(i, nn) flags[p.first[(u64)l * p.state_stride + touched[i]]] = 1;
  cta_scan(flags, pos, nfe);
  if (ntok + nn > p.tok_cap) {
    overflow(p, l, 0, ntok + nn);
    return NONE;
  }
  CTA_LOOP(i, nn) {
    u32 d = touched[i];
    u64 sl = (u64)l * p.state_stride + d;
    u32 j = ntok + pos[p.first[sl]];
    p.map[sl] = j;
    p.c_state[(u64)l * p.tok_cap + j] = d;
    p.c_cost[(u64)l * p.tok_cap + j] = CTX_INF();
    p.first[sl] = NONE;
  }
  __syncthreads();
  ntok += nn;
  if (k == 0) {
    p.n_new[l] = 0;
    p.n_tok[l] = ntok;
  }
  CTA_LOOP(i, ntok) {
    u64 t = (u64)l * p.tok_cap + i;
    u32 d = p.c_state[t];
    u64 key = p.slot[(u64)l * p.state_stride + d];
    float c = key_cost(key);
    u32 a = key_idx(key);
    bool improved = c < p.c_cost[t];
    if (a != p.c_bparc[t] || improved) {
      p.c_cost[t] = c;
      p.c_bparc[t] = a;
      u32 src;
      if (eps_source(p, l, a, d, &src)) p.c_bpsrc[t] = p.map[(u64)l * p.state_stride + src];
    }
    sx[i] = improved && eps_degree(p, l, d) > 0;
  }
  return write_frontier(p, l, ntok, sx, pos);
}

// The lane's ε links: every token's ε arcs enumerated; an arc within the cutoff from the
// token's final cost is a link (graph cost kept, acoustic 0), after the emitting links.
__device__ bool eps_links(const Frame& p, u32 l, u32 ntok, float cut) {
  u32* sx = p.sx + (u64)l * p.sx_stride;
  u32* flags = p.flags + (u64)l * p.arc_cap;
  u32* pos = p.pos + (u64)l * (p.arc_cap + 1);
  CTA_LOOP(i, ntok) sx[i] = eps_degree(p, l, p.c_state[(u64)l * p.tok_cap + i]);
  const u32 nfe = cta_scan(sx, p.eoff + (u64)l * p.eoff_stride, ntok);
  if (nfe > p.arc_cap) {
    overflow(p, l, 1, nfe);
    return false;
  }
  CTA_LOOP(i, nfe) {
    u64 e = (u64)l * p.arc_cap + i;
    u32 u;
    Step st = eps_arc(p, l, i, ntok, 0, &u);
    p.e_gc[e] = st.gc;
    flags[i] = p.c_cost[(u64)l * p.tok_cap + u] + st.gc <= cut;
  }
  const u32 nl = cta_scan(flags, pos, nfe);
  const u32 nle = p.n_link_e[l];
  if (nle + nl > p.link_cap) {
    overflow(p, l, 2, nle + nl);
    return false;
  }
  CTA_LOOP(i, nfe) {
    u64 e = (u64)l * p.arc_cap + i;
    if (!flags[i]) continue;
    u32 u;
    Step st = eps_arc(p, l, i, ntok, 0, &u);
    u64 o = (u64)l * p.link_cap + nle + pos[i];
    p.l_src[o] = u;
    p.l_dst[o] = p.map[(u64)l * p.state_stride + st.dst];
    p.l_arc[o] = st.id;
    p.l_graph[o] = p.e_gc[e];
    p.l_ac[o] = 0.0f;
  }
  if (threadIdx.x == 0) p.n_link[l] = nle + nl;
  return true;
}

// The next frame's expand cut (search `finish_frame`): every token within the cutoff, or,
// with more tokens than max_active, the histogram's: 256 bins from the best cost to the cutoff,
// the first bin whose cumulative count passes max_active (at least 1) bounds the expansion.
__device__ void next_cut(const Frame& p, u32 l, u32 ntok, float cut) {
  __shared__ u32 best;
  __shared__ u32 hist[HISTOGRAM_BINS];
  u32* nc = p.next_cut + 4 * l;
  const u32 k = threadIdx.x;
  if (ntok <= p.max_active) {
    if (k == 0) {
      nc[0] = __float_as_uint(0.0f);
      nc[1] = __float_as_uint(0.0f);
      nc[2] = __float_as_uint(-1.0f);
      nc[3] = __float_as_uint(cut);
    }
    return;
  }
  if (k == 0) best = ord_bits(CTX_INF());
  CTA_LOOP(j, HISTOGRAM_BINS) hist[j] = 0;
  __syncthreads();
  float m = CTX_INF();
  CTA_LOOP(i, ntok) m = CTX_FMIN(m, p.c_cost[(u64)l * p.tok_cap + i]);
  if (m < CTX_INF()) atomicMin(&best, ord_bits(m));
  __syncthreads();
  const float b = from_ord(best), width = (cut - b) / (float)HISTOGRAM_BINS;
  CTA_LOOP(i, ntok) atomicAdd(&hist[histogram_bin(p.c_cost[(u64)l * p.tok_cap + i], b, width)], 1u);
  __syncthreads();
  if (k == 0) {
    u32 cum = 0, bins = HISTOGRAM_BINS;
    for (u32 j = 0; j < HISTOGRAM_BINS; ++j) {
      cum += hist[j];
      if (cum > p.max_active) {
        bins = j > 1 ? j : 1;
        break;
      }
    }
    nc[0] = __float_as_uint(b);
    nc[1] = __float_as_uint(width);
    nc[2] = __float_as_uint((float)bins);
    nc[3] = __float_as_uint(cut);
  }
  __syncthreads();
}

// The frame after the expansion, for one lane per block: the emitting half, the ε-closure's
// rounds until the frontier is empty, the ε links, the next frame's expand cut. The closure's
// pops are budgeted (64 per token + 100,000): beyond it the lane has an ε cycle the beam cannot
// end — an error; its per-state arrays are cleared for the lane's next use.
extern "C" __global__ void frame_finish(const Frame p) {
  const u32 l = blockIdx.y;
  if (!lane_on(p, l)) return;
  u32 ntok = 0, nf = 0;
  if (!finish_emitting(p, l, ntok, nf)) return;
  if (threadIdx.x == 0) p.n_tok[l] = ntok;
  const float cut = p.cutoff[l];
  u64 pops = 0;
  while (nf > 0) {
    pops += nf;
    if (pops > 64ull * ntok + 100000ull) {
      CTA_LOOP(s, p.state_stride) {
        u64 sl = (u64)l * p.state_stride + s;
        p.slot[sl] = KEY_NONE;
        p.first[sl] = NONE;
        p.map[sl] = NONE;
      }
      if (threadIdx.x == 0) {
        p.status[l] |= ST_EPS_CYCLE;
        p.n_tok[l] = 0;
      }
      return;
    }
    nf = closure_round(p, l, ntok, nf, cut);
    if (nf == NONE) return;
  }
  if (p.lattice && !eps_links(p, l, ntok, cut)) return;
  next_cut(p, l, ntok, cut);
}

// ---------------------------------------------------------------------------------------------
// The frame back to the host.

// pack_offsets: one block (grid (1, 1)). Every lane's tokens and links get their offsets in
// the packed output (lanes in order, a stopped or idle lane empty); the header gets every
// lane's status, counts, cutoff, offsets, needs and work, and the totals.
extern "C" __global__ void pack_offsets(const Frame p) {
  const u32 n = p.lanes;
  u32* cnt_t = p.lane_scan;
  u32* off_t = cnt_t + (n + 1);
  u32* cnt_k = off_t + (n + 1);
  u32* off_k = cnt_k + (n + 1);
  CTA_LOOP(l, n) {
    bool ok = lane_on(p, l);
    cnt_t[l] = ok ? p.n_tok[l] : 0;
    cnt_k[l] = ok ? p.n_link[l] : 0;
  }
  const u32 tt = cta_scan(cnt_t, off_t, n);
  const u32 tk = cta_scan(cnt_k, off_k, n);
  CTA_LOOP(l, n) {
    u32* h = p.out + HDR0 + HDR * l;
    bool act = lane_active(p, l), ok = lane_on(p, l);
    h[0] = act ? p.status[l] : 0;
    h[1] = cnt_t[l];
    h[2] = cnt_k[l];
    h[3] = ok ? p.n_link_e[l] : 0;
    h[4] = __float_as_uint(ok ? p.cutoff[l] : 0.0f);
    h[5] = off_t[l];
    h[6] = off_k[l];
    h[7] = act ? p.need[3 * l] : 0;
    h[8] = act ? p.need[3 * l + 1] : 0;
    h[9] = act ? p.need[3 * l + 2] : 0;
    h[10] = act ? p.work[2 * l] : 0;
    h[11] = act ? p.work[2 * l + 1] : 0;
  }
  if (threadIdx.x == 0) {
    p.out[0] = tt;
    p.out[1] = tk;
    p.out[2] = 0;
    p.out[3] = 0;
  }
}

// gather_out: grid (blocks, lanes). One thread per (lane, item): token i and link i of the lane
// copied to the lane's place in the packed output; token i's state has its slot and map entry
// cleared for the next frame (every slot written this frame belongs to a token, or was
// cleared when its state fell outside the cutoff).
extern "C" __global__ void gather_out(const Frame p) {
  const u32* h = p.out + HDR0 + HDR * blockIdx.y;
  LANE_LOOP(h[1] > h[2] ? h[1] : h[2]) {
    const u32 tt = p.out[0], tk = p.out[1], base = HDR0 + HDR * p.lanes;
    if (i < h[1]) {
      u64 t = (u64)l * p.tok_cap + i;
      u32 o = base + h[5] + i;
      u32 d = p.c_state[t];
      p.out[o] = d;
      p.out[o + tt] = __float_as_uint(p.c_cost[t]);
      p.out[o + 2 * tt] = p.c_bpsrc[t];
      p.out[o + 3 * tt] = p.c_bparc[t];
      u64 sl = (u64)l * p.state_stride + d;
      p.slot[sl] = KEY_NONE;
      p.map[sl] = NONE;
    }
    if (i < h[2]) {
      u64 k = (u64)l * p.link_cap + i;
      u32 o = base + 4 * tt + h[6] + i;
      p.out[o] = p.l_src[k];
      p.out[o + tk] = p.l_dst[k];
      p.out[o + 2 * tk] = p.l_arc[k];
      p.out[o + 3 * tk] = __float_as_uint(p.l_graph[k]);
      p.out[o + 4 * tk] = __float_as_uint(p.l_ac[k]);
    }
  }
}

// selftest_scan: one block (grid (1, 1)) scans x[0..n) into x[n + 1 ..] (the total after
// it) — cta_scan alone, for ctx-cuda's tests of the block primitive at any block size and
// thread order (tests/shim.rs).
struct ScanTest {
  u32* x;
  u32 n;
  u32 unused;
};
extern "C" __global__ void selftest_scan(const ScanTest p) {
  cta_scan(p.x, p.x + p.n + 1, p.n);
}

CTX_EXPORT_BLOCK(emit_begin, Frame)
CTX_EXPORT(expand, Frame)
CTX_EXPORT_BLOCK(frame_finish, Frame)
CTX_EXPORT_BLOCK(pack_offsets, Frame)
CTX_EXPORT(gather_out, Frame)
CTX_EXPORT_BLOCK(selftest_scan, ScanTest)
