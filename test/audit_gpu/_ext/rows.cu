// Row-wise candidates, one block of 256 threads per row of a 2-D float32
// tensor: layer norm, softmax, sum, mean and max over the last dim, in a
// fixed order (the same bits every call); planted bugs: one-pass
// variance, no max subtracted, fp16 partial sums, atomic adds in arrival
// order, NaN swallowed, strides ignored, the input overwritten, a store
// one element past the output's end.
#include "common.cuh"

#define KC_R 256

static void check_rows(const at::Tensor& x) {
  KC_CHECK_FLOAT(x);
  TORCH_CHECK(x.dim() == 2, "a 2-D tensor expected (rows over the last dim)");
}

template <bool ONE_PASS, bool INPLACE>
__global__ void kc_layer_norm(float* x, const float* __restrict__ w, const float* __restrict__ b,
                              float* y, int n, float eps) {
  __shared__ float smem[KC_R];
  float* xr = x + (int64_t)blockIdx.x * n;
  float* yr = INPLACE ? xr : y + (int64_t)blockIdx.x * n;
  float s = 0.f, s2 = 0.f;
  for (int j = threadIdx.x; j < n; j += blockDim.x) {
    s += xr[j];
    if (ONE_PASS) s2 += xr[j] * xr[j];
  }
  float mean = kc_block_sum(s, smem) / n;
  float var;
  if (ONE_PASS) {  // the bug: E[x^2] - E[x]^2 cancels for rows with a large mean
    var = kc_block_sum(s2, smem) / n - mean * mean;
  } else {
    float d2 = 0.f;
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
      float d = xr[j] - mean;
      d2 += d * d;
    }
    var = kc_block_sum(d2, smem) / n;
  }
  float rstd = rsqrtf(var + eps);
  for (int j = threadIdx.x; j < n; j += blockDim.x) yr[j] = (xr[j] - mean) * rstd * w[j] + b[j];
}

template <bool ONE_PASS, bool INPLACE>
static at::Tensor layer_norm_t(at::Tensor x, at::Tensor w, at::Tensor b, double eps) {
  check_rows(x);
  if (!INPLACE) x = x.contiguous();
  TORCH_CHECK(x.is_contiguous(), "expected a contiguous input");
  w = w.contiguous();
  b = b.contiguous();
  TORCH_CHECK(w.numel() == x.size(1) && b.numel() == x.size(1), "weight and bias of the row's size");
  at::Tensor y = INPLACE ? x : at::empty_like(x);
  if (x.numel() == 0) return y;
  kc_layer_norm<ONE_PASS, INPLACE><<<x.size(0), KC_R, 0, KC_STREAM>>>(
      x.data_ptr<float>(), w.data_ptr<float>(), b.data_ptr<float>(), y.data_ptr<float>(),
      (int)x.size(1), (float)eps);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}

at::Tensor layer_norm(at::Tensor x, at::Tensor w, at::Tensor b, double eps) {
  return layer_norm_t<false, false>(x, w, b, eps);
}
at::Tensor layer_norm_one_pass_variance(at::Tensor x, at::Tensor w, at::Tensor b, double eps) {
  return layer_norm_t<true, false>(x, w, b, eps);
}
at::Tensor layer_norm_writes_input(at::Tensor x, at::Tensor w, at::Tensor b, double eps) {
  return layer_norm_t<false, true>(x, w, b, eps);
}

template <bool SUB_MAX>
__global__ void kc_softmax(const float* __restrict__ x, float* __restrict__ y, int n) {
  __shared__ float smem[KC_R];
  const float* xr = x + (int64_t)blockIdx.x * n;
  float* yr = y + (int64_t)blockIdx.x * n;
  float m = 0.f;  // SUB_MAX=false, the bug: exp(x) overflows for logits past 88
  if (SUB_MAX) {
    float t = -INFINITY;
    for (int j = threadIdx.x; j < n; j += blockDim.x) t = kc_nanmax(xr[j], t);
    m = kc_block_max(t, smem);
  }
  float s = 0.f;
  for (int j = threadIdx.x; j < n; j += blockDim.x) s += expf(xr[j] - m);
  s = kc_block_sum(s, smem);
  for (int j = threadIdx.x; j < n; j += blockDim.x) yr[j] = expf(xr[j] - m) / s;
}

template <bool SUB_MAX>
static at::Tensor softmax_t(at::Tensor x) {
  check_rows(x);
  x = x.contiguous();
  at::Tensor y = at::empty_like(x);
  if (x.numel() == 0) return y;
  kc_softmax<SUB_MAX><<<x.size(0), KC_R, 0, KC_STREAM>>>(x.data_ptr<float>(), y.data_ptr<float>(),
                                                         (int)x.size(1));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
at::Tensor softmax(at::Tensor x) { return softmax_t<true>(x); }
at::Tensor softmax_no_max_subtraction(at::Tensor x) { return softmax_t<false>(x); }

enum { RED_SUM = 0, RED_SUM_FP16 = 1, RED_MEAN = 2, RED_MAX = 3, RED_MAX_FMAX = 4, RED_SUM_PAST_END = 5 };

template <int KIND>
__global__ void kc_reduce_rows(const float* __restrict__ x, float* __restrict__ y, int n) {
  __shared__ float smem[KC_R];
  const float* xr = x + (int64_t)blockIdx.x * n;
  if (KIND == RED_MAX || KIND == RED_MAX_FMAX) {
    float t = -INFINITY;
    for (int j = threadIdx.x; j < n; j += blockDim.x)
      t = KIND == RED_MAX ? kc_nanmax(xr[j], t) : fmaxf(t, xr[j]);  // fmaxf: the bug
    if (KIND == RED_MAX) {
      t = kc_block_max(t, smem);
    } else {
      smem[threadIdx.x] = t;
      __syncthreads();
      for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s) smem[threadIdx.x] = fmaxf(smem[threadIdx.x], smem[threadIdx.x + s]);
        __syncthreads();
      }
      t = smem[0];
    }
    if (threadIdx.x == 0) y[blockIdx.x] = t;
    return;
  }
  float s;
  if (KIND == RED_SUM_FP16) {  // the bug: each thread's running sum kept in fp16
    __half h = __float2half(0.f);
    for (int j = threadIdx.x; j < n; j += blockDim.x) h = __hadd(h, __float2half(xr[j]));
    s = __half2float(h);
  } else {
    s = 0.f;
    for (int j = threadIdx.x; j < n; j += blockDim.x) s += xr[j];
  }
  s = kc_block_sum(s, smem);
  if (threadIdx.x == 0) y[blockIdx.x] = KIND == RED_MEAN ? s / n : s;
  // the bug: the last row's sum stored again, one element past the end
  if (KIND == RED_SUM_PAST_END && threadIdx.x == 0 && blockIdx.x == gridDim.x - 1)
    y[blockIdx.x + 1] = s;
}

template <int KIND>
static at::Tensor reduce_rows(at::Tensor x, bool contiguous) {
  check_rows(x);
  if (contiguous) x = x.contiguous();  // false: the planted layout bug
  at::Tensor y = at::empty({x.size(0)}, x.options());
  if (x.size(0) == 0) return y;
  if (x.size(1) == 0 && (KIND == RED_MAX || KIND == RED_MAX_FMAX))
    TORCH_CHECK(false, "max of an empty row");
  kc_reduce_rows<KIND><<<x.size(0), KC_R, 0, KC_STREAM>>>(x.data_ptr<float>(), y.data_ptr<float>(),
                                                          (int)x.size(1));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
at::Tensor sum_rows(at::Tensor x) { return reduce_rows<RED_SUM>(x, true); }
at::Tensor sum_rows_fp16_accumulation(at::Tensor x) { return reduce_rows<RED_SUM_FP16>(x, true); }
at::Tensor sum_rows_writes_past_end(at::Tensor x) { return reduce_rows<RED_SUM_PAST_END>(x, true); }
at::Tensor mean_rows(at::Tensor x) { return reduce_rows<RED_MEAN>(x, true); }
at::Tensor mean_rows_strides_ignored(at::Tensor x) { return reduce_rows<RED_MEAN>(x, false); }
at::Tensor amax_rows(at::Tensor x) { return reduce_rows<RED_MAX>(x, true); }
at::Tensor amax_rows_nan_swallowed(at::Tensor x) { return reduce_rows<RED_MAX_FMAX>(x, true); }

// The bug: each warp's partial sum atomically added to its row's result,
// in whatever order the warps of the many blocks arrive.
__global__ void kc_sum_atomic(const float* __restrict__ x, float* __restrict__ y, int n) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  const float* xr = x + (int64_t)blockIdx.y * n;
  float v = j < n ? xr[j] : 0.f;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0) atomicAdd(&y[blockIdx.y], v);
}

at::Tensor sum_rows_atomic(at::Tensor x) {
  check_rows(x);
  x = x.contiguous();
  at::Tensor y = at::zeros({x.size(0)}, x.options());
  if (x.numel() == 0) return y;
  dim3 grid(kc_blocks(x.size(1), 128), x.size(0));
  kc_sum_atomic<<<grid, 128, 0, KC_STREAM>>>(x.data_ptr<float>(), y.data_ptr<float>(), (int)x.size(1));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
