// Convolution and pooling candidates, NCHW: a direct 2-D convolution
// (one thread per output, fp32), max pooling (NaN kept, as ATen) and
// average pooling with square windows, no padding for pooling; planted
// bugs: strides ignored, NaN swallowed, the input used as scratch.
#include "common.cuh"

__global__ void kc_conv2d(const float* __restrict__ x, const float* __restrict__ w,
                          const float* __restrict__ bias, float* __restrict__ y,
                          int N, int C, int H, int W, int O, int KH, int KW,
                          int stride, int pad, int OH, int OW) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  int64_t total = (int64_t)N * O * OH * OW;
  if (i >= total) return;
  int ow = i % OW, oh = (i / OW) % OH, o = (i / ((int64_t)OW * OH)) % O;
  int n = i / ((int64_t)OW * OH * O);
  float acc = 0.f;
  for (int c = 0; c < C; ++c)
    for (int kh = 0; kh < KH; ++kh) {
      int ih = oh * stride - pad + kh;
      if (ih < 0 || ih >= H) continue;
      for (int kw = 0; kw < KW; ++kw) {
        int iw = ow * stride - pad + kw;
        if (iw < 0 || iw >= W) continue;
        acc = fmaf(x[(((int64_t)n * C + c) * H + ih) * W + iw],
                   w[(((int64_t)o * C + c) * KH + kh) * KW + kw], acc);
      }
    }
  if (bias) acc += bias[o];
  y[i] = acc;
}

static at::Tensor conv(at::Tensor x, at::Tensor w, c10::optional<at::Tensor> bias,
                       int64_t stride, int64_t pad, bool contiguous) {
  KC_CHECK_FLOAT(x);
  KC_CHECK_FLOAT(w);
  TORCH_CHECK(x.dim() == 4 && w.dim() == 4 && x.size(1) == w.size(1), "NCHW and OCKK expected");
  // contiguous=false is the planted bug: x's storage read as dense NCHW
  if (contiguous) x = x.contiguous();
  w = w.contiguous();
  at::Tensor bc;
  if (bias) bc = bias->contiguous();
  int N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  int O = w.size(0), KH = w.size(2), KW = w.size(3);
  int OH = (H + 2 * pad - KH) / stride + 1, OW = (W + 2 * pad - KW) / stride + 1;
  at::Tensor y = at::empty({N, O, OH, OW}, x.options().memory_format(at::MemoryFormat::Contiguous));
  int64_t total = y.numel();
  if (total == 0) return y;
  kc_conv2d<<<kc_blocks(total, 256), 256, 0, KC_STREAM>>>(
      x.data_ptr<float>(), w.data_ptr<float>(), bias ? bc.data_ptr<float>() : nullptr,
      y.data_ptr<float>(), N, C, H, W, O, KH, KW, (int)stride, (int)pad, OH, OW);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}

at::Tensor conv2d(at::Tensor x, at::Tensor w, c10::optional<at::Tensor> b, int64_t s, int64_t p) {
  return conv(x, w, b, s, p, true);
}
at::Tensor conv2d_strides_ignored(at::Tensor x, at::Tensor w, c10::optional<at::Tensor> b,
                                  int64_t s, int64_t p) {
  return conv(x, w, b, s, p, false);
}

enum { POOL_MAX = 0, POOL_MAX_FMAX = 1, POOL_AVG = 2 };

template <int KIND>
__global__ void kc_pool(const float* __restrict__ x, float* __restrict__ y, int64_t planes,
                        int H, int W, int k, int s, int OH, int OW) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= planes * OH * OW) return;
  int ow = i % OW, oh = (i / OW) % OH;
  int64_t p = i / ((int64_t)OW * OH);
  const float* xp = x + p * H * W;
  float m = KIND == POOL_AVG ? 0.f : -INFINITY;
  for (int kh = 0; kh < k; ++kh)
    for (int kw = 0; kw < k; ++kw) {
      float v = xp[(int64_t)(oh * s + kh) * W + ow * s + kw];
      if (KIND == POOL_MAX) m = kc_nanmax(v, m);
      if (KIND == POOL_MAX_FMAX) m = fmaxf(m, v);  // the bug: NaN dropped
      if (KIND == POOL_AVG) m += v;
    }
  y[i] = KIND == POOL_AVG ? m / (float)(k * k) : m;
}

template <int KIND>
static at::Tensor pool(at::Tensor x, int64_t k, int64_t s, bool contiguous) {
  KC_CHECK_FLOAT(x);
  TORCH_CHECK(x.dim() == 4, "NCHW expected");
  if (contiguous) x = x.contiguous();  // false: the planted layout bug
  int N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  int OH = (H - k) / s + 1, OW = (W - k) / s + 1;
  at::Tensor y = at::empty({N, C, OH, OW}, x.options().memory_format(at::MemoryFormat::Contiguous));
  int64_t total = y.numel();
  if (total == 0) return y;
  kc_pool<KIND><<<kc_blocks(total, 256), 256, 0, KC_STREAM>>>(
      x.data_ptr<float>(), y.data_ptr<float>(), (int64_t)N * C, H, W, (int)k, (int)s, OH, OW);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}

at::Tensor max_pool2d(at::Tensor x, int64_t k, int64_t s) { return pool<POOL_MAX>(x, k, s, true); }
at::Tensor max_pool2d_nan_swallowed(at::Tensor x, int64_t k, int64_t s) {
  return pool<POOL_MAX_FMAX>(x, k, s, true);
}
at::Tensor avg_pool2d(at::Tensor x, int64_t k, int64_t s) { return pool<POOL_AVG>(x, k, s, true); }
at::Tensor avg_pool2d_strides_ignored(at::Tensor x, int64_t k, int64_t s) {
  return pool<POOL_AVG>(x, k, s, false);
}

// The bug: a separable 2x2 max whose first pass (max over each pair of
// columns) is written into the input itself; the result is right.
__global__ void kc_pool_rows_inplace(float* x, int64_t pairs) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < pairs) x[2 * i] = kc_nanmax(x[2 * i], x[2 * i + 1]);
}
__global__ void kc_pool_cols(const float* __restrict__ x, float* __restrict__ y, int64_t planes,
                             int H, int W, int OH, int OW) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= planes * OH * OW) return;
  int ow = i % OW, oh = (i / OW) % OH;
  const float* xp = x + (i / ((int64_t)OW * OH)) * H * W;
  y[i] = kc_nanmax(xp[(int64_t)(2 * oh) * W + 2 * ow], xp[(int64_t)(2 * oh + 1) * W + 2 * ow]);
}

at::Tensor max_pool2d_writes_input(at::Tensor x) {
  KC_CHECK_FLOAT(x);
  TORCH_CHECK(x.dim() == 4 && x.is_contiguous() && x.size(2) % 2 == 0 && x.size(3) % 2 == 0,
              "contiguous NCHW with even H, W expected");
  int N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  at::Tensor y = at::empty({N, C, H / 2, W / 2}, x.options());
  int64_t pairs = x.numel() / 2;
  if (pairs == 0) return y;
  kc_pool_rows_inplace<<<kc_blocks(pairs, 256), 256, 0, KC_STREAM>>>(x.data_ptr<float>(), pairs);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  kc_pool_cols<<<kc_blocks(y.numel(), 256), 256, 0, KC_STREAM>>>(
      x.data_ptr<float>(), y.data_ptr<float>(), (int64_t)N * C, H, W, H / 2, W / 2);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
