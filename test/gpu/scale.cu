// test/gpu/scale.cu — the `scale` kernel of the CPU stand-in (x[i] *= s),
// compiled to PTX for test/apps/app_shared.c on a GPU (KC_SCALE_PTX).
__global__ void scale(float *x, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= s;
}
