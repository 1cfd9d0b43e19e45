// GEMM candidates: C = A @ B (B [K, N]) or A @ W^T + bias (W [N, K], as
// nn.Linear), 16x16 shared-memory tiles, fp32 accumulation; planted bugs:
// fp16 accumulation inside each K tile, the K tail dropped, a relu
// epilogue that swallows NaN.
#include "common.cuh"

#define KC_T 16

enum { ACT_NONE = 0, ACT_RELU = 1, ACT_RELU_FMAX = 2 };
enum { ACC_FP32 = 0, ACC_FP16_TILE = 1, ACC_DROP_K_TAIL = 2 };

template <bool BT, int ACT, int ACC>
__global__ void kc_gemm(const float* __restrict__ A, const float* __restrict__ B,
                        const float* __restrict__ bias, float* __restrict__ C,
                        int M, int N, int K) {
  __shared__ float As[KC_T][KC_T];
  __shared__ float Bs[KC_T][KC_T];
  int row = blockIdx.y * KC_T + threadIdx.y;
  int col = blockIdx.x * KC_T + threadIdx.x;
  float acc = 0.f;
  // ACC_DROP_K_TAIL, the bug: only whole tiles of K (K % 16 columns lost)
  int kend = ACC == ACC_DROP_K_TAIL ? (K / KC_T) * KC_T : K;
  for (int k0 = 0; k0 < kend; k0 += KC_T) {
    int ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;
    As[threadIdx.y][threadIdx.x] = (row < M && ka < K) ? A[(int64_t)row * K + ka] : 0.f;
    float bv = 0.f;
    if (col < N && kb < K) bv = BT ? B[(int64_t)col * K + kb] : B[(int64_t)kb * N + col];
    Bs[threadIdx.y][threadIdx.x] = bv;
    __syncthreads();
    if (ACC == ACC_FP16_TILE) {  // the bug: fp16 products and partial sums per tile
      __half p = __float2half(0.f);
      for (int k = 0; k < KC_T; ++k)
        p = __hfma(__float2half(As[threadIdx.y][k]), __float2half(Bs[k][threadIdx.x]), p);
      acc += __half2float(p);
    } else {
      for (int k = 0; k < KC_T; ++k) acc = fmaf(As[threadIdx.y][k], Bs[k][threadIdx.x], acc);
    }
    __syncthreads();
  }
  if (row < M && col < N) {
    if (bias) acc += bias[col];
    if (ACT == ACT_RELU) acc = (acc > 0.f || isnan(acc)) ? acc : 0.f;
    if (ACT == ACT_RELU_FMAX) acc = fmaxf(acc, 0.f);  // the bug: NaN becomes 0
    C[(int64_t)row * N + col] = acc;
  }
}

template <bool BT, int ACT, int ACC>
static at::Tensor gemm(at::Tensor a, at::Tensor b, c10::optional<at::Tensor> bias) {
  KC_CHECK_FLOAT(a);
  KC_CHECK_FLOAT(b);
  TORCH_CHECK(a.dim() == 2 && b.dim() == 2, "2-D operands expected");
  a = a.contiguous();
  b = b.contiguous();
  int M = a.size(0), K = a.size(1), N = BT ? b.size(0) : b.size(1);
  TORCH_CHECK((BT ? b.size(1) : b.size(0)) == K, "inner dimensions differ");
  at::Tensor bc;
  if (bias) {
    bc = bias->contiguous();
    KC_CHECK_FLOAT(bc);
  }
  at::Tensor c = at::empty({M, N}, a.options());
  if (M == 0 || N == 0) return c;
  dim3 block(KC_T, KC_T), grid(kc_blocks(N, KC_T), kc_blocks(M, KC_T));
  kc_gemm<BT, ACT, ACC><<<grid, block, 0, KC_STREAM>>>(
      a.data_ptr<float>(), b.data_ptr<float>(), bias ? bc.data_ptr<float>() : nullptr,
      c.data_ptr<float>(), M, N, K);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return c;
}

at::Tensor matmul(at::Tensor a, at::Tensor b) { return gemm<false, ACT_NONE, ACC_FP32>(a, b, {}); }
at::Tensor matmul_fp16_accumulation(at::Tensor a, at::Tensor b) {
  return gemm<false, ACT_NONE, ACC_FP16_TILE>(a, b, {});
}
at::Tensor matmul_k_tail_dropped(at::Tensor a, at::Tensor b) {
  return gemm<false, ACT_NONE, ACC_DROP_K_TAIL>(a, b, {});
}
at::Tensor linear(at::Tensor x, at::Tensor w, at::Tensor bias) {
  return gemm<true, ACT_NONE, ACC_FP32>(x, w, bias);
}
at::Tensor linear_fp16_accumulation(at::Tensor x, at::Tensor w, at::Tensor bias) {
  return gemm<true, ACT_NONE, ACC_FP16_TILE>(x, w, bias);
}
at::Tensor linear_relu(at::Tensor x, at::Tensor w, at::Tensor bias) {
  return gemm<true, ACT_RELU, ACC_FP32>(x, w, bias);
}
at::Tensor linear_relu_nan_swallowed(at::Tensor x, at::Tensor w, at::Tensor bias) {
  return gemm<true, ACT_RELU_FMAX, ACC_FP32>(x, w, bias);
}
