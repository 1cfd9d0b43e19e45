// Elementwise candidates: relu, gelu (erf), sigmoid, silu; correct ones
// and planted bugs (NaN swallowed, Inf mishandled, strides ignored, the
// input overwritten, the tanh approximation for the erf form).
#include "common.cuh"

template <class Op>
__global__ void kc_map(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) y[i] = Op::f(x[i]);
}

struct Relu {  // relu(NaN) = NaN and relu(-0) = +0, as ATen's clamp_min
  __device__ static float f(float v) { return (v > 0.f || isnan(v)) ? v : 0.f; }
};
struct ReluFmax {  // the bug: fmaxf returns the other operand for a NaN
  __device__ static float f(float v) { return fmaxf(v, 0.f); }
};
struct Gelu {
  __device__ static float f(float v) { return 0.5f * v * (1.f + erff(v * 0.70710678118654752f)); }
};
struct GeluTanh {  // the bug: the tanh approximation where the erf form is asked for
  __device__ static float f(float v) {
    return 0.5f * v * (1.f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
  }
};
struct Sigmoid {
  __device__ static float f(float v) { return 1.f / (1.f + expf(-v)); }
};
struct SigmoidRatio {  // the bug: e^x / (1 + e^x) is inf/inf = NaN for x > 88
  __device__ static float f(float v) { float e = expf(v); return e / (1.f + e); }
};
struct Silu {
  __device__ static float f(float v) { return v / (1.f + expf(-v)); }
};

template <class Op>
static at::Tensor map(const at::Tensor& xin, bool contiguous) {
  KC_CHECK_FLOAT(xin);
  // contiguous=false is the planted layout bug: the storage read from
  // data_ptr as if it were dense and row-major
  at::Tensor x = contiguous ? xin.contiguous() : xin;
  at::Tensor y = at::empty(x.sizes(), x.options());
  int64_t n = x.numel();
  if (n == 0) return y;
  kc_map<Op><<<kc_blocks(n, 256), 256, 0, KC_STREAM>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}

template <class Op>
__global__ void kc_map_inplace(float* x, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) x[i] = Op::f(x[i]);
}

template <class Op>
static at::Tensor map_inplace(at::Tensor x) {  // the bug: the input overwritten
  KC_CHECK_FLOAT(x);
  TORCH_CHECK(x.is_contiguous(), "expected a contiguous input");
  int64_t n = x.numel();
  if (n == 0) return x;
  kc_map_inplace<Op><<<kc_blocks(n, 256), 256, 0, KC_STREAM>>>(x.data_ptr<float>(), n);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return x;
}

at::Tensor relu(at::Tensor x) { return map<Relu>(x, true); }
at::Tensor relu_nan_swallowed(at::Tensor x) { return map<ReluFmax>(x, true); }
at::Tensor relu_strides_ignored(at::Tensor x) { return map<Relu>(x, false); }
at::Tensor relu_writes_input(at::Tensor x) { return map_inplace<Relu>(x); }
at::Tensor gelu(at::Tensor x) { return map<Gelu>(x, true); }
at::Tensor gelu_tanh_approx(at::Tensor x) { return map<GeluTanh>(x, true); }
at::Tensor sigmoid(at::Tensor x) { return map<Sigmoid>(x, true); }
at::Tensor sigmoid_inf_mishandled(at::Tensor x) { return map<SigmoidRatio>(x, true); }
at::Tensor silu_writes_input(at::Tensor x) { return map_inplace<Silu>(x); }
