// CPU kernels of the linear-attention recurrences, built and called by
// models/kernels/linear_attention_cpu.py: gated linear attention's (GLA; Yang et al. 2024, §4.1)
// and, built with -DDELTA_RULE, DeltaNet's delta rule (Schlag, Irie & Schmidhuber 2021; Yang et al.
// 2024, eq. 1). For each sequence and head, with the row vectors q_t (already scaled by
// 1 / sqrt(d_k)), k_t in R^DK, v_t in R^DV and the state S (DK, DV), S_{-1} = 0:
//
//     GLA:         S_t = diag(a_t) S_{t-1} + k_t^T v_t,        a_t = exp(g_t), g_t = log alpha_t
//     delta rule:  S_t = S_{t-1} + beta_t k_t^T w_t,           w_t = v_t - k_t S_{t-1}
//     both:        o_t = q_t S_t
//
// The forward pass streams over time keeping only S; it writes o and the state at the start of
// every chunk of L steps (and the last state), never a state per step. The backward pass walks
// the chunks from the last, recomputes the chunk's L states from the state stored at its start,
// and runs the adjoint recurrence backward in time, G_t = dL/dS_t = q_t^T do_t + (what S_{t+1}
// passes back), and dq_t = do_t S_t^T for both, then
//
//     GLA:    dk_t = v_t G_t^T;  dv_t = k_t G_t;  dg_t = a_t ⊙ rowsum(G_t ⊙ S_{t-1});
//             back: diag(a_t) G_t
//     delta:  du = k_t G_t;  dbeta_t = du · w_t;  dw = beta_t du;  dv_t = dw;
//             dk_t = beta_t w_t G_t^T - dw S_{t-1}^T;  back: G_t - k_t^T dw
//
// Passes over a (DK, DV) state per step, the cost at these sizes: the forward pass three for the
// delta rule (w, the update, o) and two for GLA; the backward pass's recompute writes each state
// from the one before (and keeps the delta rule's w_t), then the adjoint takes GLA's step in one
// pass and the delta rule's in two (du needs the whole of G_t before dw).
//
// Memory: the chunk starts (B, H, T / L + 1, DK, DV) beside the (B, T, H, .) inputs, and per
// thread one chunk of states ((L + 1) DK DV) and of errors (L DV); no state per step.
//
// Sizes DK, DV and REAL (float or double) are set by the build (-DDK=... -DDV=... -DREAL=...),
// so every loop has fixed bounds the compiler unrolls and vectorises. Shapes: q, k, dq, dk
// (B, T, H, DK); v, o, do, dv (B, T, H, DV); the gate
// and its gradient (B, T, H, GATE): GLA's log alpha (GATE = DK) or beta (GATE = 1). `threads`
// OpenMP threads split the B H sequence-heads, each computed the same way whatever the split.
//
// Written by hand because no library op fits: the chunked forms (models/gla.py, deltanet.py) are
// the GPU's, and at the CPU's small heads (d_k, d_v of 8 or 16) their (C, C) intermediates and
// triangular solves cost more than the recurrence; flash-linear-attention's kernels are Triton.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>

constexpr int L = 64;  // steps per chunk of the backward pass
#ifdef DELTA_RULE
constexpr int GATE = 1;
#else
constexpr int GATE = DK;
#endif

typedef REAL State[DK][DV];
// advance's states: the forward pass updates one in place; the backward pass writes each from
// the one before, and says so (restrict), which lets the compiler keep `before` in registers
// while it writes S (bench/kernels.py measures the backward pass).
typedef const REAL (*Before)[DV];
typedef REAL (*After)[DV];
typedef const REAL (*__restrict__ BeforeApart)[DV];
typedef REAL (*__restrict__ AfterApart)[DV];

#ifdef DELTA_RULE
// S = before + beta k^T w with w = v - k before, the prediction error the step writes (kept for
// the adjoint): the one step both passes compute (bit for bit).
template <typename In = Before, typename Out = After>
static inline void advance(In before, Out S, const REAL* gate, const REAL* k, const REAL* v,
                           REAL* w_out) {
  REAL w[DV];  // local, so the compiler keeps it in registers
  for (int j = 0; j < DV; j++) w[j] = v[j];
  for (int i = 0; i < DK; i++)
    for (int j = 0; j < DV; j++) w[j] -= k[i] * before[i][j];
  for (int i = 0; i < DK; i++)
    for (int j = 0; j < DV; j++) S[i][j] = before[i][j] + (gate[0] * k[i]) * w[j];
  std::memcpy(w_out, w, sizeof w);
}

// Step t backward: G = dL/dS_t receives q_t^T do_t, gives dq_t = do_t S_t^T and the step's
// gradients, and becomes what S_{t-1} receives from it. Two passes over the state: du = k G
// needs the whole of G before dw.
static inline void step_back(State& __restrict__ G, const State& S, const State& before,
                             const REAL* __restrict__ w, const REAL* q, const REAL* go,
                             const REAL* k, const REAL* /* v */, const REAL* gate, REAL* dq,
                             REAL* dk, REAL* dv, REAL* dgate) {
  REAL du[DV] = {}, dw[DV], db = 0;
  for (int i = 0; i < DK; i++) {
    REAL dqi = 0;
    for (int j = 0; j < DV; j++) {
      dqi += go[j] * S[i][j];
      G[i][j] += q[i] * go[j];
      du[j] += k[i] * G[i][j];
    }
    dq[i] = dqi;
  }
  for (int j = 0; j < DV; j++) {
    db += du[j] * w[j];
    dw[j] = gate[0] * du[j];
  }
  for (int i = 0; i < DK; i++) {
    REAL dki = 0;
    for (int j = 0; j < DV; j++) {
      dki += gate[0] * G[i][j] * w[j] - dw[j] * before[i][j];
      G[i][j] -= k[i] * dw[j];
    }
    dk[i] = dki;
  }
  dgate[0] = db;
  std::memcpy(dv, dw, sizeof dw);
}
#else
// S = diag(exp(g)) before + k^T v: the one step both passes compute (bit for bit). w is the
// delta rule's and unused here.
template <typename In = Before, typename Out = After>
static inline void advance(In before, Out S, const REAL* g, const REAL* k, const REAL* v,
                           REAL* /* w */) {
  for (int i = 0; i < DK; i++) {
    const REAL a = std::exp(g[i]);
    for (int j = 0; j < DV; j++) S[i][j] = a * before[i][j] + k[i] * v[j];
  }
}

// Step t backward, one pass over the state: G = dL/dS_t receives q_t^T do_t, gives dq_t =
// do_t S_t^T and the step's gradients, and becomes diag(a_t) G, what S_{t-1} receives from it.
static inline void step_back(State& __restrict__ G, const State& S, const State& before,
                             const REAL* /* w */, const REAL* q, const REAL* go, const REAL* k,
                             const REAL* v, const REAL* g, REAL* dq, REAL* dk, REAL* dv,
                             REAL* dg) {
  REAL dvt[DV] = {};
  for (int i = 0; i < DK; i++) {
    const REAL a = std::exp(g[i]);
    REAL dqi = 0, dki = 0, dai = 0;
    for (int j = 0; j < DV; j++) {
      dqi += go[j] * S[i][j];
      G[i][j] += q[i] * go[j];
      dki += G[i][j] * v[j];
      dai += G[i][j] * before[i][j];
      dvt[j] += G[i][j] * k[i];
      G[i][j] *= a;
    }
    dq[i] = dqi;
    dk[i] = dki;
    dg[i] = a * dai;
  }
  std::memcpy(dv, dvt, sizeof dvt);
}
#endif

// o_t = q_t S_t, the output of step t.
static inline void emit(const State& S, const REAL* q, REAL* o) {
  REAL out[DV] = {};
  for (int i = 0; i < DK; i++)
    for (int j = 0; j < DV; j++) out[j] += q[i] * S[i][j];
  std::memcpy(o, out, sizeof out);
}

static void forward_one(int64_t T, int64_t H, const REAL* q, const REAL* k, const REAL* v,
                        const REAL* gate, REAL* o, REAL* chk) {
  State S = {};
  REAL w[DV];
  for (int64_t t = 0; t < T; t++) {
    const int64_t at_k = t * H * DK, at_v = t * H * DV;
    if (t % L == 0) std::memcpy(chk + (t / L) * DK * DV, S, sizeof S);
    advance(S, S, gate + t * H * GATE, k + at_k, v + at_v, w);
    emit(S, q + at_k, o + at_v);
  }
  std::memcpy(chk + ((T + L - 1) / L) * DK * DV, S, sizeof S);
}

// X (L + 1 states) and W (L errors of DV) are the thread's buffers for one chunk.
static void backward_one(int64_t T, int64_t H, const REAL* go, const REAL* q, const REAL* k,
                         const REAL* v, const REAL* gate, const REAL* chk, State* X, REAL* W,
                         REAL* dq, REAL* dk, REAL* dv, REAL* dgate) {
  State G = {};
  for (int64_t c = (T + L - 1) / L - 1; c >= 0; c--) {
    const int64_t t0 = c * L, t1 = t0 + L < T ? t0 + L : T;
    std::memcpy(X[0], chk + c * DK * DV, sizeof(State));  // X[s] = S_{t0 + s - 1}
    for (int64_t t = t0; t < t1; t++) {
      const int64_t s = t - t0;
      advance<BeforeApart, AfterApart>(X[s], X[s + 1], gate + t * H * GATE, k + t * H * DK,
                                       v + t * H * DV, W + s * DV);
    }
    for (int64_t t = t1 - 1; t >= t0; t--) {
      const int64_t s = t - t0, at_k = t * H * DK, at_v = t * H * DV, at_g = t * H * GATE;
      step_back(G, X[s + 1], X[s], W + s * DV, q + at_k, go + at_v, k + at_k, v + at_v,
                gate + at_g, dq + at_k, dk + at_k, dv + at_v, dgate + at_g);
    }
  }
}

// L, for the caller to size chk.
extern "C" int chunk_length() { return L; }

// The forward pass on `threads` threads: o (B, T, H, DV), chk (B, H, K + 1, DK, DV).
extern "C" void forward(int64_t B, int64_t T, int64_t H, const REAL* q, const REAL* k,
                        const REAL* v, const REAL* gate, int threads, REAL* o, REAL* chk) {
  const int64_t K1 = (T + L - 1) / L + 1;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t n = 0; n < B * H; n++) {
    const int64_t b = n / H, h = n % H;
    const int64_t at_k = (b * T * H + h) * DK, at_v = (b * T * H + h) * DV;
    forward_one(T, H, q + at_k, k + at_k, v + at_v, gate + (b * T * H + h) * GATE, o + at_v,
                chk + n * K1 * DK * DV);
  }
}

// The backward pass on `threads` threads: dq, dk (B, T, H, DK), dv (B, T, H, DV), dgate (B, T,
// H, GATE).
extern "C" void backward(int64_t B, int64_t T, int64_t H, const REAL* go, const REAL* q,
                         const REAL* k, const REAL* v, const REAL* gate, const REAL* chk,
                         int threads, REAL* dq, REAL* dk, REAL* dv, REAL* dgate) {
  const int64_t K1 = (T + L - 1) / L + 1;
#pragma omp parallel num_threads(threads)
  {
    auto X = std::make_unique<State[]>(L + 1);
    auto W = std::make_unique<REAL[]>(L * DV);
#pragma omp for schedule(static)
    for (int64_t n = 0; n < B * H; n++) {
      const int64_t b = n / H, h = n % H;
      const int64_t at_k = (b * T * H + h) * DK, at_v = (b * T * H + h) * DV;
      const int64_t at_g = (b * T * H + h) * GATE;
      backward_one(T, H, go + at_v, q + at_k, k + at_k, v + at_v, gate + at_g,
                   chk + n * K1 * DK * DV, X.get(), W.get(), dq + at_k, dk + at_k, dv + at_v,
                   dgate + at_g);
    }
  }
}
