// The frame step of the wfst-search engine on the GPU, for a batch of lanes (docs/design.md §4, §10;
// the CPU reference is crates/wfst-search/src/search.rs, the host code that launches these
// kernels is crates/wfst-search/src/cuda/).
//
// Layout. Every kernel takes the same `Frame` by value. Per-lane arrays are lane-major with a
// fixed stride (`tok_cap`, `arc_cap`, `num_states`); per-lane scalars are indexed by lane. The
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
  // Per-state slots (stride num_states): recombination key, first discovery, token number.
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

// Enumeration index i of the expansion: its previous-frame token (*t) and emitting arc.
__device__ __forceinline__ u32 emit_arc(const Frame& p, u32 l, u32 i, u32* t) {
  const u32* off = p.eoff + (u64)l * (p.tok_cap + 1);
  *t = owner(off, p.n_prev[l], i);
  u32 s = p.p_state[(u64)l * p.tok_cap + *t];
  return p.e_off[s] + (i - off[*t]);
}

// Enumeration index i over the ε arcs of n items of this frame (item k is token toks[k], or
// token k when toks is null): the item (*k) and its ε arc.
__device__ __forceinline__ u32 eps_arc(const Frame& p, u32 l, u32 i, u32 n, const u32* toks,
                                       u32* k) {
  const u32* off = p.eoff + (u64)l * (p.tok_cap + 1);
  *k = owner(off, n, i);
  u32 u = toks ? toks[*k] : *k;
  u32 s = p.c_state[(u64)l * p.tok_cap + u];
  return p.ne_off[s] + (i - off[*k]);
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
    for (u32 a = p.e_off[s]; a < p.e_off[s + 1]; ++a) {
      float gc = p.weight[a] + boost_delta(p, l, a);
      float ac = -p.scale * row[p.ilabel[a] - 1];
      ub = CTX_FMIN(ub, cost + gc + ac);
    }
  }
  p.bound[l] = ub + p.beam;
}

// One thread per previous token: its emitting degree if it is expanded, else 0 (scan input).
extern "C" __global__ void degrees_emit(const Frame p) {
  LANE_LOOP(p.n_prev[l]) {
    u64 t = (u64)l * p.tok_cap + i;
    u32 s = p.p_state[t];
    p.sx[(u64)l * p.sx_stride + i] = keeps(p, l, p.p_cost[t]) ? p.e_off[s + 1] - p.e_off[s] : 0;
  }
}

// One thread per enumerated emitting arc e (token i = owner of e, its arc a): the candidate
// cost `(cost + (weight + delta)) + (−scale · loglik)`; within the bound, the arc offers
// (cost, a) to its destination's slot and e to the destination's first discovery; the first
// thread to reach a destination appends it to the lane's touched list (order irrelevant).
extern "C" __global__ void expand(const Frame p) {
  LANE_LOOP(p.n_exp[l]) {
    u32 t;
    u32 a = emit_arc(p, l, i, &t);
    float gc = p.weight[a] + boost_delta(p, l, a);
    float ac = -p.scale * p.rows[(u64)l * p.cols + p.ilabel[a] - 1];
    float c = p.p_cost[(u64)l * p.tok_cap + t] + gc + ac;
    u64 e = (u64)l * p.arc_cap + i;
    p.e_gc[e] = gc;
    p.e_ac[e] = ac;
    p.flags[e] = 0;
    bool ok = c <= p.bound[l];
    p.e_ok[e] = ok;
    if (ok) {
      u32 d = p.next[a];
      u64 sl = (u64)l * p.num_states + d;
      atomicMin(&p.slot[sl], pack(c, a));
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
    atomicMin(&p.emit_min[l], ord_bits(key_cost(p.slot[(u64)l * p.num_states + d])));
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
    u64 sl = (u64)l * p.num_states + d;
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
    u64 sl = (u64)l * p.num_states + d;
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
    u32 a = emit_arc(p, l, i, &t);
    u64 sl = (u64)l * p.num_states + p.next[a];
    u32 j = p.map[sl];
    if (j == NONE) continue;
    float c = p.p_cost[(u64)l * p.tok_cap + t] + p.e_gc[e] + p.e_ac[e];
    if (p.slot[sl] == pack(c, a)) p.c_bpsrc[(u64)l * p.tok_cap + j] = t;
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
    u32 a = emit_arc(p, l, i, &t);
    u32 k = p.pos[(u64)l * (p.arc_cap + 1) + i];
    if (k >= p.link_cap) continue;  // the host checks the count and grows the buffer
    u64 o = (u64)l * p.link_cap + k;
    p.l_src[o] = t;
    p.l_dst[o] = p.map[(u64)l * p.num_states + p.next[a]];
    p.l_arc[o] = a;
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
    u64 k = p.slot[(u64)l * p.num_states + d];
    p.c_cost[t] = key_cost(k);
    p.c_bparc[t] = key_idx(k);
    p.sx[(u64)l * p.sx_stride + i] = p.ne_off[d + 1] > p.ne_off[d];
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
    p.sx[(u64)l * p.sx_stride + i] = p.ne_off[d + 1] - p.ne_off[d];
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
    u32 a = eps_arc(p, l, i, p.n_front[l], p.fr_tok + (u64)l * p.tok_cap, &f);
    u32 u = p.fr_tok[(u64)l * p.tok_cap + f];
    float gc = p.weight[a] + boost_delta(p, l, a);
    float c = p.fr_cost[(u64)l * p.tok_cap + f] + gc;
    if (c > p.cutoff[l]) continue;
    u32 d = p.next[a];
    u64 sl = (u64)l * p.num_states + d;
    atomicMin(&p.slot[sl], pack(c, a));
    if (p.map[sl] == NONE && atomicMin(&p.first[sl], i) == NONE) {
      p.touched[(u64)l * p.arc_cap + atomicAdd(&p.n_new[l], 1u)] = d;
    }
  }
}

// One thread per new state of the round: flags its first discovery for numbering.
extern "C" __global__ void mark_new(const Frame p) {
  LANE_LOOP(p.n_new[l]) {
    u32 d = p.touched[(u64)l * p.arc_cap + i];
    p.flags[(u64)l * p.arc_cap + p.first[(u64)l * p.num_states + d]] = 1;
  }
}

// One thread per new state: its token number (after the existing tokens, by discovery rank),
// state and map entry; its cost starts at +∞ so that `tok_update` sees it as improved.
extern "C" __global__ void write_new(const Frame p) {
  LANE_LOOP(p.n_new[l]) {
    u32 d = p.touched[(u64)l * p.arc_cap + i];
    u64 sl = (u64)l * p.num_states + d;
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
    u64 k = p.slot[(u64)l * p.num_states + d];
    float c = key_cost(k);
    u32 a = key_idx(k);
    bool improved = c < p.c_cost[t];
    if (a != p.c_bparc[t] || improved) {
      p.c_cost[t] = c;
      p.c_bparc[t] = a;
      if (a >= p.e_off[p.num_states]) p.c_bpsrc[t] = p.map[(u64)l * p.num_states + p.src[a]];
    }
    p.sx[(u64)l * p.sx_stride + i] = improved && p.ne_off[d + 1] > p.ne_off[d];
  }
}

// ---------------------------------------------------------------------------------------------
// ε links and the end of the frame.

// One thread per token: its ε degree (scan input for the link enumeration).
extern "C" __global__ void degrees_all_eps(const Frame p) {
  LANE_LOOP(p.n_tok[l]) {
    u32 d = p.c_state[(u64)l * p.tok_cap + i];
    p.sx[(u64)l * p.sx_stride + i] = p.ne_off[d + 1] - p.ne_off[d];
  }
}

// One thread per enumerated ε arc of every token: a link when `cost + (weight + delta)` is
// within the cutoff (flag for compaction; graph cost kept).
extern "C" __global__ void eps_link_flags(const Frame p) {
  LANE_LOOP(p.n_fexp[l]) {
    u64 e = (u64)l * p.arc_cap + i;
    u32 u;
    u32 a = eps_arc(p, l, i, p.n_tok[l], 0, &u);
    float gc = p.weight[a] + boost_delta(p, l, a);
    p.e_gc[e] = gc;
    p.flags[e] = p.c_cost[(u64)l * p.tok_cap + u] + gc <= p.cutoff[l];
  }
}

// One thread per flagged ε arc: its link after the emitting links.
extern "C" __global__ void write_eps_links(const Frame p) {
  LANE_LOOP(p.n_fexp[l]) {
    u64 e = (u64)l * p.arc_cap + i;
    if (!p.flags[e]) continue;
    u32 u;
    u32 a = eps_arc(p, l, i, p.n_tok[l], 0, &u);
    u32 k = p.n_link_e[l] + p.pos[(u64)l * (p.arc_cap + 1) + i];
    if (k >= p.link_cap) continue;
    u64 o = (u64)l * p.link_cap + k;
    p.l_src[o] = u;
    p.l_dst[o] = p.map[(u64)l * p.num_states + p.next[a]];
    p.l_arc[o] = a;
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
    u64 sl = (u64)l * p.num_states + p.c_state[(u64)l * p.tok_cap + i];
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
