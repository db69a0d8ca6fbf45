// The frame step of the wfst-search engine on the GPU, for a batch of lanes (docs/design.md §4, §10;
// the CPU reference is crates/wfst-search/src/search.rs, the host code that launches these
// kernels is crates/wfst-search/src/cuda/).
//
// Layout. Every kernel takes the same `Frame` by value. Per-lane arrays are lane-major with a
// fixed stride (`tok_cap`, `arc_cap`, `state_stride`); per-lane scalars are indexed by lane. The
// grid is (blocks, lanes): `blockIdx.y` is the lane, and threads stride over the lane's items
// (`blockIdx.x * blockDim.x + threadIdx.x`, step `gridDim.x * blockDim.x`), so any grid width
// is correct. No kernel synchronises inside a block: what one thread reads was written by an
// earlier launch, or is an atomic whose outcome does not depend on the order (kernels/shim.h).
//
// One frame, in launch order (host: wfst-search/src/cuda/step.rs):
//   init_frame, best_expandable, bound, degrees_emit, scan(degrees -> eoff), expand,
//   emit_min, cutoff, mark_emit, scan(flags -> pos), write_emit, emit_bp_links,
//   [lattice: scan(lflags -> pos), write_emit_links], tok_init, scan(frontier flags),
//   write_frontier, then closure rounds until every lane's frontier is empty:
//     degrees_front, scan, relax_eps, mark_new, scan(flags -> pos), write_new, tok_update,
//     scan(frontier flags), write_frontier;
//   [lattice: degrees_all_eps, scan, eps_link_flags, scan, write_eps_links], gather_out (every
//   lane's tokens and links packed for one copy per array), reset_frame.
//
// Costs are computed with the CPU's formula in the CPU's order (compile with --fmad=false: no
// FMA contraction). Recombination keys pack an order-preserving image of the cost above the arc
// index, so one 64-bit atomicMin keeps the cheaper token and, on equal cost, the smaller arc —
// the CPU's tie rule; negative costs (boosting) order correctly, and −0.0 is folded into +0.0 as
// the CPU's `<` sees them equal. Token numbers follow the CPU's discovery order: an emitting
// token is numbered by the first (token, arc) enumeration index that reached it within the
// bound, an ε token by its first relaxation in its closure round.
//
// Open-vocabulary contexts (issue 42; the CPU layout of crates/wfst-search/src/context.rs). A
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
#define CTX_FMIN fminf
#endif

typedef unsigned int u32;
typedef unsigned long long u64;

#define NONE 0xffffffffu
#define KEY_NONE 0xffffffffffffffffull
#define HISTOGRAM_BINS 256u
#define SCAN_TILE 64u

struct Frame {
  // Graph (shared by all lanes): CSR offsets, per-arc arrays, the source state of every arc.
  const u32* e_off;
  const u32* ne_off;
  const u32* ilabel;
  const float* weight;
  const u32* next;
  const u32* src;
  // Scores: per lane one row of `cols` log-likelihoods.
  const float* rows;
  // Booster: per lane a sorted arc list at boost_off[l], boost_len[l] entries, discount.
  const u32* boost_arcs;
  const u32* boost_off;
  const u32* boost_len;
  const float* boost_discount;
  // Word boosting: the graph's output labels; per lane a sorted word list at word_off[l],
  // word_len[l] entries, with a cost per word.
  const u32* olabel;
  const u32* word_ids;
  const float* word_cost;
  const u32* word_off;
  const u32* word_len;
  // Per-lane scalars.
  const u32* active;
  u32* n_prev;
  const float* cut;  // per lane: best, width, bins (as float), cutoff of the expand rule
  u64* best_key;
  float* bound;
  u32* n_exp;
  u32* emit_min;
  float* cutoff;
  u32* n_touched;
  u32* n_tok;
  u32* n_front;
  u32* n_fexp;
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
  // Scan: input (stride scan_in_stride), exclusive output (stride scan_out_stride, one more
  // entry than items: the total), count, total, and the per-tile sums (stride tiles).
  const u32* scan_in;
  u32* scan_out;
  const u32* scan_n;
  u32* scan_tot;
  u32* tile_sum;
  // Enumeration offsets of the current phase (stride tok_cap + 1) and compaction positions
  // (stride arc_cap + 1).
  u32* eoff;
  u32* pos;
  // Frontier flags / degrees input (stride max(tok_cap, arc_cap)).
  u32* sx;
  // Lattice links (stride link_cap).
  u32* l_src;
  u32* l_dst;
  u32* l_arc;
  float* l_graph;
  float* l_ac;
  // The frame's results of every lane packed for one copy to the host: tokens of lane l from
  // out_tok_off[l], links from out_link_off[l].
  const u32* out_tok_off;
  const u32* out_link_off;
  u32* o_state;
  float* o_cost;
  u32* o_bpsrc;
  u32* o_bparc;
  u32* o_lsrc;
  u32* o_ldst;
  u32* o_larc;
  float* o_lgraph;
  float* o_lac;
  // Open-vocabulary contexts: the batch's context graphs in one pool (per graph, state arrays
  // of M + 1 entries from its state base — CSR offsets local to its arcs, final costs — and arc
  // arrays from its arc base); per lane LANE_CTX words (see `Ctx`); the main graph's entry slot
  // arcs (sorted ids, their weights and return indices) and return states; per lane the
  // expansion's enumeration items (n_prev, or 2 · n_prev with a context).
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
  const u32* n_items;
  // Sizes.
  u32 num_states;
  u32 cols;
  u32 tok_cap;
  u32 arc_cap;
  u32 link_cap;
  u32 tiles;
  u32 scan_in_stride;
  u32 scan_out_stride;
  u32 sx_stride;
  float beam;
  float scale;
  u32 lanes;
  u32 state_stride;  // per-lane per-state arrays: N main states, then the context states
  u32 eoff_stride;   // enumeration offsets per lane (2 · tok_cap + 1)
  u32 a_main;        // A: the main graph's arcs
  u32 slot_word;     // the class slot's output label (NONE without a slot)
  u32 n_entries;
  u32 n_returns;
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

// The histogram bin of `cost` (search.rs `histogram_bin`: truncation, saturating at the top bin).
__device__ __forceinline__ u32 histogram_bin(float cost, float best, float width) {
  if (width <= 0.0f) return 0;
  float q = (cost - best) / width;
  if (!(q > 0.0f)) return 0;  // negative or NaN: Rust's `as u32` gives 0
  if (q >= (float)HISTOGRAM_BINS) return HISTOGRAM_BINS - 1;
  return (u32)q;
}

// Whether a previous-frame token of cost `c` is expanded (search.rs `ExpandCut::keeps`).
__device__ __forceinline__ bool keeps(const Frame& p, u32 l, float c) {
  const float* k = p.cut + 4 * l;
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

// ε step j of search state s (search.rs `closure`): a main ε arc with the booster's delta; a
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
  u32 k = owner(off, p.n_items[l], i);
  u32 n = p.n_prev[l];
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

#define LANE_LOOP(count)                                                   \
  const u32 l = blockIdx.y;                                                \
  if (!p.active[l]) return;                                                \
  const u32 n_items = (count);                                             \
  for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < n_items;         \
       i += gridDim.x * blockDim.x)

#define PER_LANE                                                           \
  const u32 l = blockIdx.x * blockDim.x + threadIdx.x;                     \
  if (l >= p.lanes || !p.active[l]) return;

// ---------------------------------------------------------------------------------------------
// Scan: exclusive prefix sums per lane without block synchronisation, in three launches.

// One thread per (lane, tile of SCAN_TILE items): the tile's sum.
extern "C" __global__ void scan_tiles(const Frame p) {
  LANE_LOOP((p.scan_n[l] + SCAN_TILE - 1) / SCAN_TILE) {
    const u32* x = p.scan_in + (u64)l * p.scan_in_stride;
    u32 n = p.scan_n[l], a = i * SCAN_TILE, b = a + SCAN_TILE < n ? a + SCAN_TILE : n, s = 0;
    for (u32 k = a; k < b; ++k) s += x[k];
    p.tile_sum[(u64)l * p.tiles + i] = s;
  }
}
// One thread per lane: exclusive scan of the tile sums in place; the lane's total.
extern "C" __global__ void scan_tile_sums(const Frame p) {
  PER_LANE
  u32 t = (p.scan_n[l] + SCAN_TILE - 1) / SCAN_TILE, run = 0;
  u32* ts = p.tile_sum + (u64)l * p.tiles;
  for (u32 k = 0; k < t; ++k) {
    u32 v = ts[k];
    ts[k] = run;
    run += v;
  }
  p.scan_tot[l] = run;
  p.scan_out[(u64)l * p.scan_out_stride + p.scan_n[l]] = run;
}
// One thread per (lane, tile): the tile's items' exclusive sums from the tile's offset.
extern "C" __global__ void scan_apply(const Frame p) {
  LANE_LOOP((p.scan_n[l] + SCAN_TILE - 1) / SCAN_TILE) {
    const u32* x = p.scan_in + (u64)l * p.scan_in_stride;
    u32* y = p.scan_out + (u64)l * p.scan_out_stride;
    u32 n = p.scan_n[l], a = i * SCAN_TILE, b = a + SCAN_TILE < n ? a + SCAN_TILE : n;
    u32 run = p.tile_sum[(u64)l * p.tiles + i];
    for (u32 k = a; k < b; ++k) {
      y[k] = run;
      run += x[k];
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Emitting expansion.

// One thread per lane: the frame's counters and reductions start empty.
extern "C" __global__ void init_frame(const Frame p) {
  PER_LANE
  p.best_key[l] = KEY_NONE;
  p.emit_min[l] = NONE;
  p.n_touched[l] = 0;
  p.n_tok[l] = 0;
  p.n_new[l] = 0;
  p.n_link_e[l] = 0;
  p.n_link[l] = 0;
}

// One thread per previous token: offers (cost, index) of an expandable token to the lane's
// minimum — the best expandable token, ties to the smaller index (the CPU's `min_by`).
extern "C" __global__ void best_expandable(const Frame p) {
  LANE_LOOP(p.n_prev[l]) {
    float c = p.p_cost[(u64)l * p.tok_cap + i];
    if (keeps(p, l, c)) atomicMin(&p.best_key[l], pack(c, i));
  }
}

// One thread per lane: the early bound, min over the best token's emitting arcs of its
// candidate cost, plus the beam (search.rs: `bound = ub + beam`), arcs in CSR order.
extern "C" __global__ void bound(const Frame p) {
  PER_LANE
  u64 k = p.best_key[l];
  float ub = CTX_INF();
  if (k != KEY_NONE) {
    u32 i = key_idx(k);
    u32 s = p.p_state[(u64)l * p.tok_cap + i];
    float cost = p.p_cost[(u64)l * p.tok_cap + i];
    const float* row = p.rows + (u64)l * p.cols;
    u32 n = emit_degree(p, l, s);
    for (u32 j = 0; j < n; ++j) {
      Step st = emit_step(p, l, s, j);
      float ac = -p.scale * row[st.il - 1];
      ub = CTX_FMIN(ub, cost + st.gc + ac);
    }
  }
  p.bound[l] = ub + p.beam;
}

// One thread per enumeration item (a previous token; with a context each token twice, main
// pass then context pass): its emitting degree if it is expanded in this pass, else 0 (scan
// input).
extern "C" __global__ void degrees_emit(const Frame p) {
  LANE_LOOP(p.n_items[l]) {
    u32 n = p.n_prev[l], pass = i >= n;
    u64 t = (u64)l * p.tok_cap + (pass ? i - n : i);
    u32 s = p.p_state[t];
    bool here = (s >= p.num_states) == (pass != 0);
    p.sx[(u64)l * p.sx_stride + i] = here && keeps(p, l, p.p_cost[t]) ? emit_degree(p, l, s) : 0;
  }
}

// One thread per enumerated emitting arc e (token i = owner of e, its arc a): the candidate
// cost `(cost + (weight + delta)) + (−scale · loglik)`; within the bound, the arc offers
// (cost, a) to its destination's slot and e to the destination's first discovery; the first
// thread to reach a destination appends it to the lane's touched list (order irrelevant).
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

// One thread per touched state: offers its cost's image to the lane's minimum emitting cost.
extern "C" __global__ void emit_min(const Frame p) {
  LANE_LOOP(p.n_touched[l]) {
    u32 d = p.touched[(u64)l * p.arc_cap + i];
    atomicMin(&p.emit_min[l], ord_bits(key_cost(p.slot[(u64)l * p.state_stride + d])));
  }
}

// One thread per lane: the beam cutoff, best emitting cost + beam (+∞ without tokens).
extern "C" __global__ void cutoff(const Frame p) {
  PER_LANE
  p.cutoff[l] = p.n_touched[l] == 0 ? CTX_INF() : from_ord(p.emit_min[l]) + p.beam;
}

// One thread per touched state: a survivor (cost within the cutoff) flags its first discovery
// for numbering; a pruned state's slot is cleared, as the CPU drops the token.
extern "C" __global__ void mark_emit(const Frame p) {
  LANE_LOOP(p.n_touched[l]) {
    u32 d = p.touched[(u64)l * p.arc_cap + i];
    u64 sl = (u64)l * p.state_stride + d;
    if (key_cost(p.slot[sl]) <= p.cutoff[l]) {
      p.flags[(u64)l * p.arc_cap + p.first[sl]] = 1;
    } else {
      p.slot[sl] = KEY_NONE;
      p.first[sl] = NONE;
    }
  }
}

// One thread per touched state: a survivor gets its number (its discovery's rank among the
// survivors' discoveries), its state and its map entry; its first discovery is cleared for the
// closure.
extern "C" __global__ void write_emit(const Frame p) {
  LANE_LOOP(p.n_touched[l]) {
    u32 d = p.touched[(u64)l * p.arc_cap + i];
    u64 sl = (u64)l * p.state_stride + d;
    u32 f = p.first[sl];
    if (f == NONE) continue;
    u32 j = p.pos[(u64)l * (p.arc_cap + 1) + f];
    if (j >= p.tok_cap) continue;  // the host checks the count, grows the buffers, replays
    p.map[sl] = j;
    p.c_state[(u64)l * p.tok_cap + j] = d;
    p.first[sl] = NONE;
  }
}

// One thread per lane: the emitting token count is the scan's total.
extern "C" __global__ void set_tok_count(const Frame p) {
  PER_LANE
  p.n_tok[l] = p.scan_tot[l];
}

// One thread per enumerated emitting arc within the bound whose destination survived: the
// winner of the destination's slot records its source token as the back-pointer; the arc is a
// lattice link when its cost is within the cutoff (flag for compaction, in enumeration order).
extern "C" __global__ void emit_bp_links(const Frame p) {
  LANE_LOOP(p.n_exp[l]) {
    u64 e = (u64)l * p.arc_cap + i;
    p.flags[e] = 0;
    if (!p.e_ok[e]) continue;
    u32 t;
    Step st = emit_arc(p, l, i, &t);
    u64 sl = (u64)l * p.state_stride + st.dst;
    u32 j = p.map[sl];
    if (j == NONE) continue;
    float c = p.p_cost[(u64)l * p.tok_cap + t] + p.e_gc[e] + p.e_ac[e];
    if (p.slot[sl] == pack(c, st.id)) p.c_bpsrc[(u64)l * p.tok_cap + j] = t;
    if (c <= p.cutoff[l]) p.flags[e] = 1;
  }
}

// One thread per flagged emitting arc: its link (source token, destination token, arc, graph
// and acoustic cost) at its rank.
extern "C" __global__ void write_emit_links(const Frame p) {
  LANE_LOOP(p.n_exp[l]) {
    u64 e = (u64)l * p.arc_cap + i;
    if (!p.flags[e]) continue;
    u32 t;
    Step st = emit_arc(p, l, i, &t);
    u32 k = p.pos[(u64)l * (p.arc_cap + 1) + i];
    if (k >= p.link_cap) continue;  // the host checks the count and grows the buffer
    u64 o = (u64)l * p.link_cap + k;
    p.l_src[o] = t;
    p.l_dst[o] = p.map[(u64)l * p.state_stride + st.dst];
    p.l_arc[o] = st.id;
    p.l_graph[o] = p.e_gc[e];
    p.l_ac[o] = p.e_ac[e];
  }
}

// One thread per lane: the emitting link count.
extern "C" __global__ void set_link_e(const Frame p) {
  PER_LANE
  p.n_link_e[l] = p.scan_tot[l];
  p.n_link[l] = p.scan_tot[l];
}

// ---------------------------------------------------------------------------------------------
// ε-closure, in rounds (search.rs `closure`).

// One thread per emitting token: its cost and back-pointer arc from its slot; round 0's
// frontier flag (it has ε arcs).
extern "C" __global__ void tok_init(const Frame p) {
  LANE_LOOP(p.n_tok[l]) {
    u64 t = (u64)l * p.tok_cap + i;
    u32 d = p.c_state[t];
    u64 k = p.slot[(u64)l * p.state_stride + d];
    p.c_cost[t] = key_cost(k);
    p.c_bparc[t] = key_idx(k);
    p.sx[(u64)l * p.sx_stride + i] = eps_degree(p, l, d) > 0;
  }
}

// One thread per token: a flagged token joins the frontier at its rank, with its current cost
// (the snapshot the round relaxes from).
extern "C" __global__ void write_frontier(const Frame p) {
  LANE_LOOP(p.n_tok[l]) {
    if (!p.sx[(u64)l * p.sx_stride + i]) continue;
    u32 k = p.pos[(u64)l * (p.arc_cap + 1) + i];
    p.fr_tok[(u64)l * p.tok_cap + k] = i;
    p.fr_cost[(u64)l * p.tok_cap + k] = p.c_cost[(u64)l * p.tok_cap + i];
  }
}

// One thread per lane: the frontier size is the scan's total.
extern "C" __global__ void set_front_count(const Frame p) {
  PER_LANE
  p.n_front[l] = p.scan_tot[l];
}

// One thread per frontier entry: the ε degree of its token's state (scan input).
extern "C" __global__ void degrees_front(const Frame p) {
  LANE_LOOP(p.n_front[l]) {
    u32 u = p.fr_tok[(u64)l * p.tok_cap + i];
    u32 d = p.c_state[(u64)l * p.tok_cap + u];
    p.sx[(u64)l * p.sx_stride + i] = eps_degree(p, l, d);
  }
}

// One thread per enumerated ε arc of the frontier (entry f = owner, its arc a): the cost from
// the entry's snapshot `cost + (weight + delta)`; within the cutoff it offers (cost, a) to the
// destination's slot, and a destination without a token records its first discovery (the
// first thread there appends it to the round's new list).
extern "C" __global__ void relax_eps(const Frame p) {
  LANE_LOOP(p.n_fexp[l]) {
    u64 e = (u64)l * p.arc_cap + i;
    p.flags[e] = 0;
    u32 f;
    Step st = eps_arc(p, l, i, p.n_front[l], p.fr_tok + (u64)l * p.tok_cap, &f);
    float c = p.fr_cost[(u64)l * p.tok_cap + f] + st.gc;
    if (c > p.cutoff[l]) continue;
    u32 d = st.dst;
    u64 sl = (u64)l * p.state_stride + d;
    atomicMin(&p.slot[sl], pack(c, st.id));
    if (p.map[sl] == NONE && atomicMin(&p.first[sl], i) == NONE) {
      p.touched[(u64)l * p.arc_cap + atomicAdd(&p.n_new[l], 1u)] = d;
    }
  }
}

// One thread per new state of the round: flags its first discovery for numbering.
extern "C" __global__ void mark_new(const Frame p) {
  LANE_LOOP(p.n_new[l]) {
    u32 d = p.touched[(u64)l * p.arc_cap + i];
    p.flags[(u64)l * p.arc_cap + p.first[(u64)l * p.state_stride + d]] = 1;
  }
}

// One thread per new state: its token number (after the existing tokens, by discovery rank),
// state and map entry; its cost starts at +∞ so that `tok_update` sees it as improved.
extern "C" __global__ void write_new(const Frame p) {
  LANE_LOOP(p.n_new[l]) {
    u32 d = p.touched[(u64)l * p.arc_cap + i];
    u64 sl = (u64)l * p.state_stride + d;
    u32 j = p.n_tok[l] + p.pos[(u64)l * (p.arc_cap + 1) + p.first[sl]];
    if (j >= p.tok_cap) continue;  // the host checks the count and grows the buffers
    p.map[sl] = j;
    p.c_state[(u64)l * p.tok_cap + j] = d;
    p.c_cost[(u64)l * p.tok_cap + j] = CTX_INF();
    p.first[sl] = NONE;
  }
}

// One thread per lane: the round's new tokens join the count; the new list empties.
extern "C" __global__ void add_new(const Frame p) {
  PER_LANE
  p.n_tok[l] += p.n_new[l];
  p.n_new[l] = 0;
}

// One thread per token: its cost and back-pointer from its slot (an ε arc's source token is
// found through the map); the next round's frontier flag when its cost went down and its state
// has ε arcs (a tie on cost only moves the back-pointer, as on the CPU).
extern "C" __global__ void tok_update(const Frame p) {
  LANE_LOOP(p.n_tok[l]) {
    u64 t = (u64)l * p.tok_cap + i;
    u32 d = p.c_state[t];
    u64 k = p.slot[(u64)l * p.state_stride + d];
    float c = key_cost(k);
    u32 a = key_idx(k);
    bool improved = c < p.c_cost[t];
    if (a != p.c_bparc[t] || improved) {
      p.c_cost[t] = c;
      p.c_bparc[t] = a;
      u32 src;
      if (eps_source(p, l, a, d, &src)) p.c_bpsrc[t] = p.map[(u64)l * p.state_stride + src];
    }
    p.sx[(u64)l * p.sx_stride + i] = improved && eps_degree(p, l, d) > 0;
  }
}

// ---------------------------------------------------------------------------------------------
// ε links and the end of the frame.

// One thread per token: its ε degree (scan input for the link enumeration).
extern "C" __global__ void degrees_all_eps(const Frame p) {
  LANE_LOOP(p.n_tok[l]) {
    u32 d = p.c_state[(u64)l * p.tok_cap + i];
    p.sx[(u64)l * p.sx_stride + i] = eps_degree(p, l, d);
  }
}

// One thread per enumerated ε arc of every token: a link when `cost + (weight + delta)` is
// within the cutoff (flag for compaction; graph cost kept).
extern "C" __global__ void eps_link_flags(const Frame p) {
  LANE_LOOP(p.n_fexp[l]) {
    u64 e = (u64)l * p.arc_cap + i;
    u32 u;
    Step st = eps_arc(p, l, i, p.n_tok[l], 0, &u);
    p.e_gc[e] = st.gc;
    p.flags[e] = p.c_cost[(u64)l * p.tok_cap + u] + st.gc <= p.cutoff[l];
  }
}

// One thread per flagged ε arc: its link after the emitting links.
extern "C" __global__ void write_eps_links(const Frame p) {
  LANE_LOOP(p.n_fexp[l]) {
    u64 e = (u64)l * p.arc_cap + i;
    if (!p.flags[e]) continue;
    u32 u;
    Step st = eps_arc(p, l, i, p.n_tok[l], 0, &u);
    u32 k = p.n_link_e[l] + p.pos[(u64)l * (p.arc_cap + 1) + i];
    if (k >= p.link_cap) continue;
    u64 o = (u64)l * p.link_cap + k;
    p.l_src[o] = u;
    p.l_dst[o] = p.map[(u64)l * p.state_stride + st.dst];
    p.l_arc[o] = st.id;
    p.l_graph[o] = p.e_gc[e];
    p.l_ac[o] = 0.0f;
  }
}

// One thread per lane: all links counted.
extern "C" __global__ void add_eps_links(const Frame p) {
  PER_LANE
  p.n_link[l] = p.n_link_e[l] + p.scan_tot[l];
}

// One thread per (lane, item): token i and link i of the lane copied to the lane's place in
// the packed output (offsets from the host, which knows every lane's counts).
extern "C" __global__ void gather_out(const Frame p) {
  LANE_LOOP(p.n_tok[l] > p.n_link[l] ? p.n_tok[l] : p.n_link[l]) {
    if (i < p.n_tok[l]) {
      u64 t = (u64)l * p.tok_cap + i;
      u32 o = p.out_tok_off[l] + i;
      p.o_state[o] = p.c_state[t];
      p.o_cost[o] = p.c_cost[t];
      p.o_bpsrc[o] = p.c_bpsrc[t];
      p.o_bparc[o] = p.c_bparc[t];
    }
    if (i < p.n_link[l]) {
      u64 k = (u64)l * p.link_cap + i;
      u32 o = p.out_link_off[l] + i;
      p.o_lsrc[o] = p.l_src[k];
      p.o_ldst[o] = p.l_dst[k];
      p.o_larc[o] = p.l_arc[k];
      p.o_lgraph[o] = p.l_graph[k];
      p.o_lac[o] = p.l_ac[k];
    }
  }
}

// One thread per token of the frame: its state's slot and map entry are cleared for the next
// frame (every slot written this frame belongs to a token, or was cleared by mark_emit).
extern "C" __global__ void reset_frame(const Frame p) {
  LANE_LOOP(p.n_tok[l]) {
    u64 sl = (u64)l * p.state_stride + p.c_state[(u64)l * p.tok_cap + i];
    p.slot[sl] = KEY_NONE;
    p.map[sl] = NONE;
  }
}

CTX_EXPORT(scan_tiles, Frame)
CTX_EXPORT(scan_tile_sums, Frame)
CTX_EXPORT(scan_apply, Frame)
CTX_EXPORT(init_frame, Frame)
CTX_EXPORT(best_expandable, Frame)
CTX_EXPORT(bound, Frame)
CTX_EXPORT(degrees_emit, Frame)
CTX_EXPORT(expand, Frame)
CTX_EXPORT(emit_min, Frame)
CTX_EXPORT(cutoff, Frame)
CTX_EXPORT(mark_emit, Frame)
CTX_EXPORT(write_emit, Frame)
CTX_EXPORT(set_tok_count, Frame)
CTX_EXPORT(emit_bp_links, Frame)
CTX_EXPORT(write_emit_links, Frame)
CTX_EXPORT(set_link_e, Frame)
CTX_EXPORT(tok_init, Frame)
CTX_EXPORT(write_frontier, Frame)
CTX_EXPORT(set_front_count, Frame)
CTX_EXPORT(degrees_front, Frame)
CTX_EXPORT(relax_eps, Frame)
CTX_EXPORT(mark_new, Frame)
CTX_EXPORT(write_new, Frame)
CTX_EXPORT(add_new, Frame)
CTX_EXPORT(tok_update, Frame)
CTX_EXPORT(degrees_all_eps, Frame)
CTX_EXPORT(eps_link_flags, Frame)
CTX_EXPORT(write_eps_links, Frame)
CTX_EXPORT(add_eps_links, Frame)
CTX_EXPORT(gather_out, Frame)
CTX_EXPORT(reset_frame, Frame)
