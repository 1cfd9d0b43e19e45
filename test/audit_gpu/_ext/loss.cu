// Loss candidates (reduction 'mean'): nll_loss, cross_entropy, mse_loss.
// Correct ones sum per-row (or per-block) terms in a fixed order; planted
// bugs: atomic adds in arrival order, the input negated in place.
#include "common.cuh"

#define KC_L 256

// The loss terms, one per row (nll, cross entropy) or per block (mse),
// summed in a fixed order by one block and divided by the count.
__global__ void kc_mean_of(const float* __restrict__ terms, float* __restrict__ out, int64_t n,
                           float count) {
  __shared__ float smem[KC_L];
  float s = 0.f;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) s += terms[j];
  s = kc_block_sum(s, smem);
  if (threadIdx.x == 0) out[0] = s / count;
}

__global__ void kc_div(float* out, float count) { out[0] /= count; }

template <bool ATOMIC, bool NEGATE_INPUT>
__global__ void kc_nll_terms(float* x, const int64_t* __restrict__ t, float* terms, int64_t N,
                             int C) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= N) return;
  float* p = x + i * C + t[i];
  float v;
  if (NEGATE_INPUT) {  // the bug: the chosen log-probability negated in the input
    *p = -*p;
    v = *p;
  } else {
    v = -*p;
  }
  if (ATOMIC) atomicAdd(terms, v); else terms[i] = v;
}

template <bool ATOMIC, bool NEGATE_INPUT>
static at::Tensor nll_t(at::Tensor x, at::Tensor t) {
  KC_CHECK_FLOAT(x);
  TORCH_CHECK(x.dim() == 2 && t.dim() == 1 && t.scalar_type() == at::kLong, "[N, C] and [N] expected");
  if (!NEGATE_INPUT) x = x.contiguous();
  TORCH_CHECK(x.is_contiguous(), "expected a contiguous input");
  t = t.contiguous();
  int64_t N = x.size(0);
  at::Tensor out = at::zeros({}, x.options());
  at::Tensor terms = ATOMIC ? out : at::empty({N}, x.options());
  if (N == 0) return out.fill_(NAN);
  // ATOMIC: one thread per block, so that the adds come from many blocks
  int threads = ATOMIC ? 1 : 128;
  kc_nll_terms<ATOMIC, NEGATE_INPUT><<<kc_blocks(N, threads), threads, 0, KC_STREAM>>>(
      x.data_ptr<float>(), t.data_ptr<int64_t>(), terms.data_ptr<float>(), N, (int)x.size(1));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  if (ATOMIC)
    kc_div<<<1, 1, 0, KC_STREAM>>>(out.data_ptr<float>(), (float)N);
  else
    kc_mean_of<<<1, KC_L, 0, KC_STREAM>>>(terms.data_ptr<float>(), out.data_ptr<float>(), N, (float)N);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}
at::Tensor nll_loss(at::Tensor x, at::Tensor t) { return nll_t<false, false>(x, t); }
at::Tensor nll_loss_atomic(at::Tensor x, at::Tensor t) { return nll_t<true, false>(x, t); }
at::Tensor nll_loss_writes_input(at::Tensor x, at::Tensor t) { return nll_t<false, true>(x, t); }

// Cross entropy of one row per block: logsumexp(x) - x[t].
template <bool ATOMIC>
__global__ void kc_ce_rows(const float* __restrict__ x, const int64_t* __restrict__ t,
                           float* terms, int C) {
  __shared__ float smem[KC_L];
  const float* xr = x + (int64_t)blockIdx.x * C;
  float m = -INFINITY;
  for (int j = threadIdx.x; j < C; j += blockDim.x) m = kc_nanmax(xr[j], m);
  m = kc_block_max(m, smem);
  float s = 0.f;
  for (int j = threadIdx.x; j < C; j += blockDim.x) s += expf(xr[j] - m);
  s = kc_block_sum(s, smem);
  if (threadIdx.x == 0) {
    float v = logf(s) + m - xr[t[blockIdx.x]];
    if (ATOMIC) atomicAdd(terms, v); else terms[blockIdx.x] = v;
  }
}

template <bool ATOMIC>
static at::Tensor ce_t(at::Tensor x, at::Tensor t) {
  KC_CHECK_FLOAT(x);
  TORCH_CHECK(x.dim() == 2 && t.dim() == 1 && t.scalar_type() == at::kLong, "[N, C] and [N] expected");
  x = x.contiguous();
  t = t.contiguous();
  int64_t N = x.size(0);
  at::Tensor out = at::zeros({}, x.options());
  at::Tensor terms = ATOMIC ? out : at::empty({N}, x.options());
  if (N == 0) return out.fill_(NAN);
  kc_ce_rows<ATOMIC><<<N, KC_L, 0, KC_STREAM>>>(x.data_ptr<float>(), t.data_ptr<int64_t>(),
                                                terms.data_ptr<float>(), (int)x.size(1));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  if (ATOMIC)
    kc_div<<<1, 1, 0, KC_STREAM>>>(out.data_ptr<float>(), (float)N);
  else
    kc_mean_of<<<1, KC_L, 0, KC_STREAM>>>(terms.data_ptr<float>(), out.data_ptr<float>(), N, (float)N);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}
at::Tensor cross_entropy(at::Tensor x, at::Tensor t) { return ce_t<false>(x, t); }
at::Tensor cross_entropy_atomic(at::Tensor x, at::Tensor t) { return ce_t<true>(x, t); }

// mse: each block's sum of squared differences, then their mean.
template <bool ATOMIC>
__global__ void kc_sq_diff(const float* __restrict__ a, const float* __restrict__ b, float* terms,
                           int64_t n) {
  __shared__ float smem[KC_L];
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  float d = i < n ? a[i] - b[i] : 0.f;
  float v = d * d;
  if (ATOMIC) {  // the bug: one atomic add per warp, in arrival order
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) atomicAdd(terms, v);
    return;
  }
  v = kc_block_sum(v, smem);
  if (threadIdx.x == 0) terms[blockIdx.x] = v;
}

template <bool ATOMIC>
static at::Tensor mse_t(at::Tensor a, at::Tensor b) {
  KC_CHECK_FLOAT(a);
  KC_CHECK_FLOAT(b);
  TORCH_CHECK(a.sizes() == b.sizes(), "same shapes expected");
  a = a.contiguous();
  b = b.contiguous();
  int64_t n = a.numel();
  at::Tensor out = at::zeros({}, a.options());
  if (n == 0) return out.fill_(NAN);
  unsigned blocks = kc_blocks(n, KC_L);
  at::Tensor terms = ATOMIC ? out : at::empty({(int64_t)blocks}, a.options());
  kc_sq_diff<ATOMIC><<<blocks, KC_L, 0, KC_STREAM>>>(a.data_ptr<float>(), b.data_ptr<float>(),
                                                     terms.data_ptr<float>(), n);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  if (ATOMIC)
    kc_div<<<1, 1, 0, KC_STREAM>>>(out.data_ptr<float>(), (float)n);
  else
    kc_mean_of<<<1, KC_L, 0, KC_STREAM>>>(terms.data_ptr<float>(), out.data_ptr<float>(), blocks,
                                          (float)n);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}
at::Tensor mse_loss(at::Tensor a, at::Tensor b) { return mse_t<false>(a, b); }
at::Tensor mse_loss_atomic(at::Tensor a, at::Tensor b) { return mse_t<true>(a, b); }
