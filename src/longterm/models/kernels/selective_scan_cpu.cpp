// CPU kernel of Mamba's selective scan (S6; Gu & Dao 2023, §3.2 and Algorithm 2), built and
// called by models/kernels/selective_scan_cpu.py. For each sequence, channel e and state index n:
//
//     x_t = exp(Δ_t A) ⊙ x_{t-1} + Δ_t B_t u_t        x (E, N), x_{-1} = 0        [eq. 2a, ZOH/Euler]
//     y_t = C_t · x_t + D ⊙ u_t                        y (E)                       [eq. 2b]
//
// The forward pass streams over time keeping only the state x (E, N) of the sequence; it writes
// y and the state at the start of every chunk of L steps (and the last state), never a state per
// step. The backward pass walks the chunks from the last, recomputes the chunk's L states from
// the state stored at its start, and runs the adjoint recurrence backward in time:
//
//     λ_t = C_t gy_t + exp(Δ_{t+1} A) ⊙ λ_{t+1}                     (dL/dx_t, (E, N))
//     dA += λ_t ⊙ x_{t-1} ⊙ exp(Δ_t A) Δ_t;   dΔ_t = Σ_n [λ_t x_{t-1} exp(Δ_t A) A + λ_t B_t u_t]
//     du_t = Σ_n λ_t Δ_t B_t + D gy_t;  dB_t = Σ_e λ_t Δ_t u_t;  dC_t = Σ_e gy_t x_t;  dD += gy_t u_t
//
// The recompute keeps each step's decay exp(Δ_t A) for the adjoint, so the backward pass takes
// one exp per element and step, as the forward pass does.
//
// Memory: the chunk starts (B, T / L + 1, N, E) beside the (B, T, E) inputs, and per thread one
// chunk of states ((L + 1) N E) and of decays (L N E); no (B, T, E, N) tensor. The loops run
// over the channels e, VL at a time (vector registers), so no sum is horizontal but the ones
// over e for dB and dC.
//
// Sizes N (d_state), E (channels, a multiple of the vector length: the caller pads) and REAL
// (float or double) are set by the build (-DN=... -DE=... -DREAL=...). Shapes, per batch:
// u, delta, y, gy, du, ddelta (B, T, E); Bm, Cm, dB, dC (B, T, N); A (N, E) (A^T); D (E);
// chk (B, K + 1, N, E) with K = ceil(T / L); the parameter shares dA (B, N, E), dD (B, E).
// `threads` OpenMP threads split the batch into whole sequences, each computed the same way
// whatever the split.
//
// Written by hand because no library op fits: a sequence of PyTorch ops over time writes a
// (B, E, N) temporary per op and step, and autograd keeps one per step (a (B, T, E, N) tensor);
// mamba-ssm's kernel is CUDA only.

#include <cstdint>
#include <cstring>
#include <memory>

#ifdef __AVX512F__
#define VBYTES 64
#else
#define VBYTES 32
#endif
constexpr int VL = VBYTES / sizeof(REAL);  // channels per vector
constexpr int EV = E / VL;                 // vectors per row of channels
constexpr int L = 32;                      // steps per chunk of the backward pass
static_assert(E % VL == 0, "the channels are whole vectors (the caller pads E)");
typedef REAL vec __attribute__((vector_size(VBYTES)));
#if REAL_IS_DOUBLE
typedef int64_t ivec __attribute__((vector_size(VBYTES)));
constexpr int MANTISSA = 52, BIAS = 1023;
constexpr double LOWEST = -708.0;  // exp of less is below the smallest normal double
#else
typedef int32_t ivec __attribute__((vector_size(VBYTES)));
constexpr int MANTISSA = 23, BIAS = 127;
constexpr double LOWEST = -87.0;  // exp of less is below the smallest normal float
#endif

static inline REAL hsum(vec v) {  // lanes summed in order: the same result on every call
  REAL s = 0;
  for (int l = 0; l < VL; l++) s += v[l];
  return s;
}

// exp(z) for z <= 0 (z = Δ A, Δ > 0, A < 0), to about one unit in the last place of REAL:
// z = k ln 2 + r with |r| <= ln 2 / 2, exp(r) by its Taylor polynomial (to r^8 for float,
// r^13 for double), times 2^k built in the exponent bits. Below LOWEST it gives exp(LOWEST), a
// decay under 1e-37 that no sum can tell from zero. libm's exp is a scalar call per lane.
static inline vec exp_(vec z) {
  z = z < (REAL)LOWEST ? (REAL)LOWEST : z;
  vec y = z * (REAL)1.4426950408889634;                   // z / ln 2 <= 0
  ivec k = __builtin_convertvector(y - (REAL)0.5, ivec);  // round(y): truncation toward 0
  vec kf = __builtin_convertvector(k, vec);
  vec r = z - kf * (REAL)0.693145751953125 - kf * (REAL)1.428606820309417e-06;  // ln 2, in two
#if REAL_IS_DOUBLE
  vec p = r * (1 / 6227020800.0) + 1 / 479001600.0;
  p = p * r + 1 / 39916800.0;
  p = p * r + 1 / 3628800.0;
  p = p * r + 1 / 362880.0;
  p = p * r + 1 / 40320.0;
  p = p * r + 1 / 5040.0;
#else
  vec p = r * (REAL)(1 / 40320.0) + (REAL)(1 / 5040.0);
#endif
  p = p * r + (REAL)(1 / 720.0);
  p = p * r + (REAL)(1 / 120.0);
  p = p * r + (REAL)(1 / 24.0);
  p = p * r + (REAL)(1 / 6.0);
  p = p * r + (REAL)0.5;
  p = p * r + (REAL)1;
  p = p * r + (REAL)1;
  ivec bits = (k + BIAS) << MANTISSA;  // 2^k
  return p * (vec)bits;
}

static inline void load(vec* out, const REAL* row) { std::memcpy(out, row, sizeof(vec) * EV); }
static inline void save(REAL* row, const vec* in) { std::memcpy(row, in, sizeof(vec) * EV); }

// One step of the recurrence: x = exp(Δ A) x + Δ B u, and the output C . x + D u into y (EV).
static inline void step(vec (*x)[EV], const vec* dt, const vec* uu, const REAL* Bt,
                        const REAL* Ct, const vec (*A)[EV], const vec* Dv, vec* y) {
  for (int j = 0; j < EV; j++) y[j] = Dv[j] * uu[j];
  for (int n = 0; n < N; n++) {
    REAL b = Bt[n], c = Ct[n];
    for (int j = 0; j < EV; j++) {
      vec a = exp_(dt[j] * A[n][j]);
      x[n][j] = a * x[n][j] + dt[j] * uu[j] * b;
      y[j] += c * x[n][j];
    }
  }
}

// The backward pass's recompute of a step: x = exp(Δ A) before + Δ B u, as `step` computes it
// (bit for bit), without the output, keeping the decays exp(Δ A) for the adjoint (decay, (N, EV)).
static inline void restep(const vec (*__restrict__ before)[EV], vec (*__restrict__ x)[EV],
                          const vec* dt, const vec* uu, const REAL* Bt, const vec (*A)[EV],
                          vec (*__restrict__ decay)[EV]) {
  for (int n = 0; n < N; n++) {
    REAL b = Bt[n];
    for (int j = 0; j < EV; j++) {
      vec a = exp_(dt[j] * A[n][j]);
      x[n][j] = a * before[n][j] + dt[j] * uu[j] * b;
      decay[n][j] = a;
    }
  }
}

// One sequence of the forward pass: y (T, E) and the chunk starts chk (K + 1, N, E).
static void forward_one(int64_t T, const REAL* u, const REAL* delta, const vec (*A)[EV],
                        const REAL* Bm, const REAL* Cm, const vec* Dv, vec (*x)[EV], REAL* y,
                        REAL* chk) {
  std::memset(x, 0, sizeof(vec) * N * EV);
  vec dt[EV], uu[EV], out[EV];
  for (int64_t t = 0; t < T; t++) {
    if (t % L == 0) std::memcpy(chk + (t / L) * N * E, x, sizeof(vec) * N * EV);
    load(dt, delta + t * E);
    load(uu, u + t * E);
    step(x, dt, uu, Bm + t * N, Cm + t * N, A, Dv, out);
    save(y + t * E, out);
  }
  std::memcpy(chk + ((T + L - 1) / L) * N * E, x, sizeof(vec) * N * EV);
}

// One sequence of the backward pass: du, ddelta (T, E), dB, dC (T, N), and its shares of dA
// (N, E) and dD (E). X ((L + 1) N EV) holds a chunk's states; G (N, EV) carries
// exp(Δ_{t+1} A) λ_{t+1}.
static void backward_one(int64_t T, const REAL* gy, const REAL* u, const REAL* delta,
                         const vec (*A)[EV], const REAL* Bm, const REAL* Cm, const vec* Dv,
                         const REAL* chk, vec (*X)[N][EV], vec (*Ea)[N][EV], vec (*G)[EV],
                         vec (*dA)[EV],
                         REAL* du, REAL* ddelta, REAL* dB, REAL* dC, REAL* dD) {
  std::memset(G, 0, sizeof(vec) * N * EV);
  std::memset(dA, 0, sizeof(vec) * N * EV);
  vec dD_sum[EV] = {}, dt[EV], uu[EV], g[EV];
  for (int64_t k = (T + L - 1) / L - 1; k >= 0; k--) {
    int64_t t0 = k * L, len = T - t0 < L ? T - t0 : L;
    std::memcpy(X[0], chk + k * N * E, sizeof(vec) * N * EV);
    for (int64_t s = 0; s < len; s++) {  // the chunk's states again, X[s + 1] = x_{t0 + s}
      load(dt, delta + (t0 + s) * E);
      load(uu, u + (t0 + s) * E);
      restep(X[s], X[s + 1], dt, uu, Bm + (t0 + s) * N, A, Ea[s]);
    }
    for (int64_t s = len - 1; s >= 0; s--) {
      int64_t t = t0 + s;
      load(dt, delta + t * E);
      load(uu, u + t * E);
      load(g, gy + t * E);
      vec ddt[EV] = {}, duu[EV];
      for (int j = 0; j < EV; j++) {
        duu[j] = Dv[j] * g[j];
        dD_sum[j] += g[j] * uu[j];
      }
      for (int n = 0; n < N; n++) {
        REAL b = Bm[t * N + n], c = Cm[t * N + n];
        vec sb = {}, sc = {};
        for (int j = 0; j < EV; j++) {
          vec lam = g[j] * c + G[n][j];
          vec a = Ea[s][n][j];
          vec dz = lam * X[s][n][j] * a;  // dL/d(Δ A)
          sc += g[j] * X[s + 1][n][j];
          sb += lam * dt[j] * uu[j];
          dA[n][j] += dz * dt[j];
          ddt[j] += dz * A[n][j] + lam * b * uu[j];
          duu[j] += lam * dt[j] * b;
          G[n][j] = a * lam;
        }
        dB[t * N + n] = hsum(sb);
        dC[t * N + n] = hsum(sc);
      }
      save(ddelta + t * E, ddt);
      save(du + t * E, duu);
    }
  }
  save(dD, dD_sum);
}

// L, for the caller to size chk.
extern "C" int chunk_length() { return L; }

// The forward pass of a batch on `threads` threads: y (B, T, E), chk (B, K + 1, N, E).
extern "C" void forward(int64_t B, int64_t T, const REAL* u, const REAL* delta, const REAL* A,
                        const REAL* Bm, const REAL* Cm, const REAL* D, int threads, REAL* y,
                        REAL* chk) {
  const int64_t K1 = (T + L - 1) / L + 1;
  vec Av[N][EV], Dv[EV];
  std::memcpy(Av, A, sizeof Av);
  std::memcpy(Dv, D, sizeof Dv);
#pragma omp parallel num_threads(threads)
  {
    auto x = std::make_unique<vec[][EV]>(N);
#pragma omp for schedule(static)
    for (int64_t i = 0; i < B; i++)
      forward_one(T, u + i * T * E, delta + i * T * E, Av, Bm + i * T * N, Cm + i * T * N, Dv,
                  x.get(), y + i * T * E, chk + i * K1 * N * E);
  }
}

// The backward pass of a batch on `threads` threads: du, ddelta (B, T, E), dB, dC (B, T, N),
// and each sequence's shares dA (B, N, E) and dD (B, E).
extern "C" void backward(int64_t B, int64_t T, const REAL* gy, const REAL* u, const REAL* delta,
                         const REAL* A, const REAL* Bm, const REAL* Cm, const REAL* D,
                         const REAL* chk, int threads, REAL* du, REAL* ddelta, REAL* dA,
                         REAL* dB, REAL* dC, REAL* dD) {
  const int64_t K1 = (T + L - 1) / L + 1;
  vec Av[N][EV], Dv[EV];
  std::memcpy(Av, A, sizeof Av);
  std::memcpy(Dv, D, sizeof Dv);
#pragma omp parallel num_threads(threads)
  {
    auto X = std::make_unique<vec[][N][EV]>(L + 1);
    auto Ea = std::make_unique<vec[][N][EV]>(L);
    auto G = std::make_unique<vec[][EV]>(N);
    auto dAs = std::make_unique<vec[][EV]>(N);
#pragma omp for schedule(static)
    for (int64_t i = 0; i < B; i++) {
      backward_one(T, gy + i * T * E, u + i * T * E, delta + i * T * E, Av, Bm + i * T * N,
                   Cm + i * T * N, Dv, chk + i * K1 * N * E, X.get(), Ea.get(), G.get(),
                   dAs.get(),
                   du + i * T * E, ddelta + i * T * E, dB + i * T * N, dC + i * T * N,
                   dD + i * E);
      std::memcpy(dA + i * N * E, dAs.get(), sizeof(vec) * N * EV);
    }
  }
}
