// CPU kernels of the fused encoder + pooling (models/fused.py, Raffel & Ellis 2015, §2.2): one
// pass per sequence over time; built and called by models/kernels/fused_cpu.py.
//
//     h_t = LReLU(W x_t + b);  e_t = tanh(w . h_t + b_w);  c = sum_t softmax(e)_t h_t   [eq. 1]
//     or c = mean_t h_t (attention = 0)                                                 [eq. 2]
//
// Each sequence's kept steps are packed K at a time into a block. A block's inputs, scores and
// pooling weights stay in vector registers (NV vectors of VL steps) while the loops run over the
// D state units, so every operation works on VL steps at once and no sum is horizontal inside
// the loops. No (B, T, D) tensor is ever written; the backward pass recomputes the states of a
// block instead of reading them. A block with fewer than K kept steps (the sequence's last) is
// filled with steps of zero weight, which add nothing.
//
// The score is bounded, e_t in [-1, 1], so exp(e_t) cannot overflow and the softmax needs no
// running maximum (the paper's code has none either). tanh and exp are computed in float64
// whatever REAL is, from polynomials the compiler vectorises (libm's are scalar calls).
//
// Sizes F (input features), D (state units) and the type REAL (float or double) are set by the
// build (-DF=... -DD=... -DREAL=...). Shapes: x (B, T, F), keep (B, T) bool (the steps that
// count), W (F * D) (W^T flattened: row f holds the weights of input feature f), b, w (D),
// c (B, D), alpha and q (B, T). `threads` OpenMP threads split the batch into whole sequences,
// and each sequence's outputs are computed the same way whatever the split.
//
// Written by hand, with the compiler's vector extensions, because no library op fits: a
// sequence of PyTorch ops writes at least a (B, chunk, D) temporary per op and is bound by that
// memory traffic, and loops compiled by numba (the kernels before these) kept a block's sums in
// memory rather than in registers and ran on a second thread pool beside PyTorch's.

#include <cstdint>
#include <cstring>
#include <memory>

#ifdef __AVX512F__
#define VBYTES 64
#else
#define VBYTES 32
#endif
constexpr int VL = VBYTES / sizeof(REAL);  // steps per vector
constexpr int K = 64;                      // kept steps per block
constexpr int NV = K / VL;                 // vectors per block
typedef REAL vec __attribute__((vector_size(VBYTES)));
typedef double dvec8 __attribute__((vector_size(64)));
typedef REAL rvec8 __attribute__((vector_size(8 * sizeof(REAL))));
typedef int64_t ivec8 __attribute__((vector_size(64)));
static_assert(K % VL == 0 && K % 8 == 0, "a block is whole vectors");

static inline REAL hsum(vec v) {  // lanes summed in order: the same result on every call
  REAL s = 0;
  for (int l = 0; l < VL; l++) s += v[l];
  return s;
}

// exp(y) for float64 y in [-2 TANH_ONE, 1], to about 1e-14 relative: a Taylor polynomial at
// y / 64, squared 6 times (|y / 64| <= 0.625: the series to s^13 / 13! is exact to 2e-14).
template <class V>
static inline V exp_(V y) {
  V s = y * (1.0 / 64);
  V r = s * (1 / 6227020800.0) + 1 / 479001600.0;
  r = r * s + 1 / 39916800.0;
  r = r * s + 1 / 3628800.0;
  r = r * s + 1 / 362880.0;
  r = r * s + 1 / 40320.0;
  r = r * s + 1 / 5040.0;
  r = r * s + 1 / 720.0;
  r = r * s + 1 / 120.0;
  r = r * s + 1 / 24.0;
  r = r * s + 1 / 6.0;
  r = r * s + 1 / 2.0;
  r = r * s + 1.0;
  r = r * s + 1.0;
  for (int i = 0; i < 6; i++) r = r * r;
  return r;
}

constexpr double TANH_ONE = 20.0;  // |z| beyond which tanh(z) rounds to +-1 in float64

// E[k] = tanh(Z[k]) and P[k] = exp(E[k]) for the n real steps of a block, P[k] = 0 for the rest
// (tanh z = (1 - exp(-2|z|)) / (1 + exp(-2|z|))), eight steps at a time in float64.
static inline void tanh_exp(const REAL* Z, REAL* E, REAL* P, int n) {
  const ivec8 lane = {0, 1, 2, 3, 4, 5, 6, 7};
  for (int k = 0; k < K; k += 8) {
    rvec8 z8;
    std::memcpy(&z8, Z + k, sizeof z8);
    dvec8 z = __builtin_convertvector(z8, dvec8);
    dvec8 a = z < 0 ? -z : z;
    a = a < TANH_ONE ? a : TANH_ONE;
    dvec8 q = exp_(-2.0 * a);
    dvec8 e = (1.0 - q) / (1.0 + q);
    e = z >= 0 ? e : -e;
    dvec8 p = exp_(e);
    p = lane + k < n ? p : 0.0;
    rvec8 e_out = __builtin_convertvector(e, rvec8), p_out = __builtin_convertvector(p, rvec8);
    std::memcpy(E + k, &e_out, sizeof e_out);
    std::memcpy(P + k, &p_out, sizeof p_out);
  }
}

// The next (at most K) kept steps of one sequence from step *t on: their inputs X (F, K) and
// steps rows (K); the rest of X is zeros. Returns the number of steps packed; *t moves past them.
static inline int pack(const REAL* x, const uint8_t* keep, int64_t T, int64_t* t, REAL (*X)[K],
                       int64_t* rows) {
  int n = 0;
  int64_t s = *t;
  for (; n < K && s < T; s++) {
    if (!keep[s]) continue;
    for (int f = 0; f < F; f++) X[f][n] = x[s * F + f];
    rows[n++] = s;
  }
  for (int k = n; k < K; k++)
    for (int f = 0; f < F; f++) X[f][k] = 0;
  *t = s;
  return n;
}

// A block (F, K) of packed steps as vectors Xv (F, NV).
static inline void load_block(const REAL (*X)[K], vec (*Xv)[NV]) {
  for (int f = 0; f < F; f++) std::memcpy(Xv[f], X[f], sizeof(vec) * NV);
}

// The block's states H (D, NV), h = LReLU(W_d . x + b_d) unit by unit, and for attention
// z += a_d h in the same loop (the score w . h, or g . h in the backward pass).
static inline void states(const vec (*Xv)[NV], const REAL* W, const REAL* b, REAL slope,
                          const REAL* a, bool attention, vec (*H)[NV], vec* z) {
  for (int d = 0; d < D; d++) {
    for (int j = 0; j < NV; j++) {
      vec u = b[d] + W[d] * Xv[0][j];
      for (int f = 1; f < F; f++) u += W[f * D + d] * Xv[f][j];
      vec h = u > 0 ? u : slope * u;
      H[d][j] = h;
      if (attention) z[j] += a[d] * h;
    }
  }
}

// One sequence of the forward pass: its c (D), pooling weights alpha (T), zero on the steps not
// kept, and what the backward pass needs of the scores, q = alpha (1 - e^2) (T) (alpha for the
// mean). H (D, NV) and C (D) are the calling thread's buffers.
static void forward_one(int64_t T, const REAL* x, const uint8_t* keep, const REAL* W,
                        const REAL* b, REAL slope, const REAL* w, REAL bw, bool attention,
                        vec (*H)[NV], vec* C, REAL* c, REAL* alpha, REAL* q) {
  alignas(64) REAL X[F][K], Z[K], E[K] = {}, P[K];
  int64_t rows[K];
  std::memset(alpha, 0, T * sizeof(REAL));
  std::memset(q, 0, T * sizeof(REAL));
  for (int d = 0; d < D; d++) C[d] = vec{};
  double s = 0;  // sum_t p_t
  for (int64_t t = 0; t < T;) {
    int n = pack(x, keep, T, &t, X, rows);
    vec Xv[F][NV], z[NV], Pv[NV];
    load_block(X, Xv);
    for (int j = 0; j < NV; j++) z[j] = vec{} + bw;
    states(Xv, W, b, slope, w, attention, H, z);
    if (attention) {
      std::memcpy(Z, z, sizeof Z);
      tanh_exp(Z, E, P, n);
    } else {  // the mean: every p_t = exp(0)
      for (int k = 0; k < K; k++) P[k] = k < n;
    }
    std::memcpy(Pv, P, sizeof Pv);
    for (int d = 0; d < D; d++) {  // C_d += sum_t p_t h_td, VL partial sums per unit
      vec sum = Pv[0] * H[d][0];
      for (int j = 1; j < NV; j++) sum += Pv[j] * H[d][j];
      C[d] += sum;
    }
    for (int k = 0; k < n; k++) {
      alpha[rows[k]] = P[k];
      q[rows[k]] = 1 - E[k] * E[k];
      s += P[k];
    }
  }
  REAL inv = 1.0 / s;
  for (int d = 0; d < D; d++) c[d] = hsum(C[d]) * inv;
  for (int64_t t = 0; t < T; t++) {
    alpha[t] *= inv;
    q[t] *= alpha[t];
  }
}

// One sequence of the backward pass: its dx (T, F) (written only if need_dx), and its shares
// of dW (F * D), db, dw (D) and db_w, the gradients of g . c, given its pooling weights alpha (T)
// and, for attention, q = alpha (1 - e^2) (T) (not read for the mean). H (D, NV) and the sums
// SW (F, D), SB, SD (D) are the calling thread's buffers.
//
// dL/de_t = alpha_t (g . h_t - g . c);  with z_t = w . h_t + b_w, dL/dz_t = q_t (g . h_t - g . c)
// and dL/dh_t = alpha_t g + dL/dz_t w; dL/du_t = dL/dh_t where h_t > 0, else slope dL/dh_t.
static void backward_one(int64_t T, const REAL* g, const REAL* x, const uint8_t* keep,
                         const REAL* W, const REAL* b, REAL slope, const REAL* w, const REAL* c,
                         const REAL* alpha, const REAL* q, bool attention, bool need_dx,
                         vec (*H)[NV], vec (*SW)[D], vec* SB, vec* SD, REAL* dx, REAL* dW,
                         REAL* db, REAL* dw, REAL* dbw) {
  alignas(64) REAL X[F][K], A[K], Q[K], dXs[F][K];
  int64_t rows[K];
  REAL gc = 0;  // g . c
  for (int d = 0; d < D; d++) gc += g[d] * c[d];
  for (int d = 0; d < D; d++) {
    SB[d] = SD[d] = vec{};
    for (int f = 0; f < F; f++) SW[f][d] = vec{};
  }
  vec sbw = vec{};
  for (int64_t t = 0; t < T;) {
    int n = pack(x, keep, T, &t, X, rows);
    for (int k = 0; k < K; k++) {
      A[k] = k < n ? alpha[rows[k]] : 0;
      Q[k] = k < n && attention ? q[rows[k]] : 0;
    }
    vec Xv[F][NV], Av[NV], dZ[NV], gH[NV] = {}, dX[F][NV] = {};
    load_block(X, Xv);
    std::memcpy(Av, A, sizeof Av);
    std::memcpy(dZ, Q, sizeof dZ);
    states(Xv, W, b, slope, g, attention, H, gH);
    if (attention) {  // dZ = dL/dz_t
      for (int j = 0; j < NV; j++) {
        dZ[j] *= gH[j] - gc;
        sbw += dZ[j];
      }
    }
    for (int d = 0; d < D; d++) {
      REAL gd = g[d], wd = w[d];
      vec sw[F] = {}, sb = {}, sd = {};
      for (int j = 0; j < NV; j++) {
        vec h = H[d][j];
        vec dh = Av[j] * gd + dZ[j] * wd;
        sd += dZ[j] * h;
        vec du = h > 0 ? dh : slope * dh;
        sb += du;
        for (int f = 0; f < F; f++) sw[f] += du * Xv[f][j];
        if (need_dx)
          for (int f = 0; f < F; f++) dX[f][j] += W[f * D + d] * du;
      }
      SB[d] += sb;
      SD[d] += sd;
      for (int f = 0; f < F; f++) SW[f][d] += sw[f];
    }
    if (need_dx) {
      std::memcpy(dXs, dX, sizeof dXs);
      for (int k = 0; k < n; k++)
        for (int f = 0; f < F; f++) dx[rows[k] * F + f] = dXs[f][k];
    }
  }
  for (int d = 0; d < D; d++) {
    db[d] = hsum(SB[d]);
    dw[d] = hsum(SD[d]);
    for (int f = 0; f < F; f++) dW[f * D + d] = hsum(SW[f][d]);
  }
  *dbw = hsum(sbw);
}

// The forward pass of a batch: c (B, D), alpha and q (B, T) (forward_one), on `threads`
// threads. The buffers of a thread are on the heap: D is the model's, of any size.
extern "C" void forward(int64_t B, int64_t T, const REAL* x, const uint8_t* keep, const REAL* W,
                        const REAL* b, REAL slope, const REAL* w, REAL bw, int attention,
                        int threads, REAL* c, REAL* alpha, REAL* q) {
#pragma omp parallel num_threads(threads)
  {
    auto H = std::make_unique<vec[][NV]>(D);
    auto C = std::make_unique<vec[]>(D);
#pragma omp for schedule(static)
    for (int64_t i = 0; i < B; i++)
      forward_one(T, x + i * T * F, keep + i * T, W, b, slope, w, bw, attention, H.get(),
                  C.get(), c + i * D, alpha + i * T, q + i * T);
  }
}

// The backward pass of a batch: dx (B, T, F) and each sequence's shares dW (B, F * D),
// db, dw (B, D) and db_w (B) (backward_one), on `threads` threads.
extern "C" void backward(int64_t B, int64_t T, const REAL* g, const REAL* x, const uint8_t* keep,
                         const REAL* W, const REAL* b, REAL slope, const REAL* w, const REAL* c,
                         const REAL* alpha, const REAL* q, int attention, int need_dx,
                         int threads, REAL* dx, REAL* dW, REAL* db, REAL* dw, REAL* dbw) {
#pragma omp parallel num_threads(threads)
  {
    auto H = std::make_unique<vec[][NV]>(D);
    auto SW = std::make_unique<vec[][D]>(F);
    auto SB = std::make_unique<vec[]>(D), SD = std::make_unique<vec[]>(D);
#pragma omp for schedule(static)
    for (int64_t i = 0; i < B; i++)
      backward_one(T, g + i * D, x + i * T * F, keep + i * T, W, b, slope, w, c + i * D,
                   alpha + i * T, q + i * T, attention, need_dx, H.get(), SW.get(), SB.get(),
                   SD.get(), dx + i * T * F, dW + i * F * D, db + i * D, dw + i * D, dbw + i);
  }
}

// The forward pass of M models of one shape at once (a pack's members, sweeps/pack.py): member m's
// batch of B sequences of T[m] steps, its weights and its outputs are at the m-th pointer of each
// array. The M * B (member, sequence) pairs are split between `threads` threads, and each
// sequence is computed by forward_one as in `forward`: every member's outputs are those of its
// own call of `forward`.
extern "C" void forward_members(int64_t M, int64_t B, const int64_t* T, const REAL* const* x,
                                const uint8_t* const* keep, const REAL* const* W,
                                const REAL* const* b, REAL slope, const REAL* const* w,
                                const REAL* bw, int attention, int threads, REAL* const* c,
                                REAL* const* alpha, REAL* const* q) {
#pragma omp parallel num_threads(threads)
  {
    auto H = std::make_unique<vec[][NV]>(D);
    auto C = std::make_unique<vec[]>(D);
#pragma omp for schedule(static)
    for (int64_t i = 0; i < M * B; i++) {
      int64_t m = i / B, s = i % B, t = T[m];
      forward_one(t, x[m] + s * t * F, keep[m] + s * t, W[m], b[m], slope, w[m], bw[m],
                  attention, H.get(), C.get(), c[m] + s * D, alpha[m] + s * t, q[m] + s * t);
    }
  }
}

// The backward pass of M models at once, as forward_members: member m's sequences computed by
// backward_one as in `backward`, its shares of the parameter gradients at the m-th pointers.
extern "C" void backward_members(int64_t M, int64_t B, const int64_t* T, const REAL* const* g,
                                 const REAL* const* x, const uint8_t* const* keep,
                                 const REAL* const* W, const REAL* const* b, REAL slope,
                                 const REAL* const* w, const REAL* const* c,
                                 const REAL* const* alpha, const REAL* const* q, int attention,
                                 int threads, REAL* const* dW, REAL* const* db, REAL* const* dw,
                                 REAL* const* dbw) {
#pragma omp parallel num_threads(threads)
  {
    auto H = std::make_unique<vec[][NV]>(D);
    auto SW = std::make_unique<vec[][D]>(F);
    auto SB = std::make_unique<vec[]>(D), SD = std::make_unique<vec[]>(D);
#pragma omp for schedule(static)
    for (int64_t i = 0; i < M * B; i++) {
      int64_t m = i / B, s = i % B, t = T[m];
      backward_one(t, g[m] + s * D, x[m] + s * t * F, keep[m] + s * t, W[m], b[m], slope, w[m],
                   c[m] + s * D, alpha[m] + s * t, q[m] + s * t, attention, false, H.get(),
                   SW.get(), SB.get(), SD.get(), nullptr, dW[m] + s * F * D, db[m] + s * D,
                   dw[m] + s * D, dbw[m] + s);
    }
  }
}
