# test/gpu/module.mk — GPU validation suite and pass-through benchmark.
#
#   make test-gpu    test/gpu/run_gpu_tests.sh  (results in $(GPU_OUT)), then
#                    test/gpu/run_gpu_contracts.sh (results in $(GPU_OUT)/contracts),
#                    then test/gpu/run_gpu_torch.sh ($(GPU_OUT)/torch)
#   make test-gpu-torch  the PyTorch binding (run_gpu_torch.sh; $(GPU_OUT))
#   make test-gpu-conv  convolutions under the binding (torch_conv.py; $(GPU_OUT))
#   make test-gpu-devmem  kcheck's device memory, plain vs under kcheck, with
#                    the summary's categories (run_gpu_devmem.sh; $(GPU_OUT))
#   make bench-gpu   bench/run_bench.sh         (results in $(GPU_OUT))
#   make bench-gpu-torch  the PyTorch binding's cost (run_gpu_torch.sh's bench
#                    part, plain and --torch alternating; $(GPU_OUT))
#   make test-gpu-checks   test/gpu/run_gpu_checks.sh (determinism/race gates
#                          on planted races, torch ops, training; $(GPU_OUT))
#   make test-gpu-races  test/gpu/races/run_corpus.sh (the planted race
#                          corpus beside compute-sanitizer racecheck; $(GPU_OUT))
#   make test-gpu-races-sass  test/gpu/run_gpu_races_sass.sh (the race corpus
#                          of kernels with no PTX: Triton and SASS-only CUDA,
#                          beside racecheck and Triton's gsan/consan; $(GPU_OUT))
#   make test-gpu-contracts  test/gpu/run_gpu_contracts.sh (contract gates on
#                          planted bugs and correct CUDA and Triton kernels;
#                          $(GPU_OUT))
#   make bench-gpu-checks  bench/run_check_bench.sh (checking cost on a small
#                          transformer, compute-sanitizer; $(GPU_OUT))
#   make bench-gpu-targets bench/run_targets.sh (the overhead targets on the
#                    GPT-style training step: ratios to plain, profile,
#                    check cost against floor, sanitizer anchors)
#   make bench-gpu-profile bench/run_profile.sh (profile=1 per-stage times)
#   make gpu-bins    the CUDA test and benchmark programs in $(BUILD)/gpu/
#
# test-gpu and bench-gpu print "SKIP: no GPU" and succeed when nvidia-smi is
# missing or fails. They do not rebuild libkcheck.so (the GPU machine may
# lack its build dependencies: carry build/); the scripts build the CUDA
# programs with nvcc when it is there, else use the ones in $(BUILD)/gpu/.
# Included once even when named twice (make -f Makefile -f test/gpu/module.mk).

ifndef KC_GPU_MK_INCLUDED
KC_GPU_MK_INCLUDED := 1

NVCC          ?= $(CUDA_HOME)/bin/nvcc
GPU_NVCCFLAGS ?= -O2 -g -arch=sm_90
GPU_LDLIBS    := -L$(CUDA_HOME)/lib64/stubs -lcuda
GPU_RPATH     := -Xlinker -rpath,$(CUDA_HOME)/lib64
# Empty: the scripts use $OUT, else ./gpu-out.
GPU_OUT       ?=
GPU_BINS      := $(BUILD)/gpu/launches $(BUILD)/gpu/launches_static $(BUILD)/gpu/launch_overhead \
                 $(BUILD)/gpu/races $(BUILD)/gpu/contract_bugs $(BUILD)/gpu/ctx_fault \
                 $(BUILD)/gpu/scrub_fault

$(BUILD)/gpu/launches: test/gpu/launches.cu
	@mkdir -p $(@D)
	$(NVCC) $(GPU_NVCCFLAGS) -cudart shared $(GPU_RPATH) $< -o $@ $(GPU_LDLIBS)

$(BUILD)/gpu/launches_static: test/gpu/launches.cu
	@mkdir -p $(@D)
	$(NVCC) $(GPU_NVCCFLAGS) -cudart static $< -o $@ $(GPU_LDLIBS)

# Whether a kernel fault in another context leaves the primary one usable.
$(BUILD)/gpu/ctx_fault: test/gpu/ctx_fault.cu
	@mkdir -p $(@D)
	$(NVCC) $(GPU_NVCCFLAGS) -cudart shared $(GPU_RPATH) $< -o $@ $(GPU_LDLIBS)

# A read of never-written shared memory used as an index (the race gate's
# scrub fault, test/gpu/scrub_fault_check.sh).
$(BUILD)/gpu/scrub_fault: test/gpu/scrub_fault.cu
	@mkdir -p $(@D)
	$(NVCC) $(GPU_NVCCFLAGS) -cudart shared $(GPU_RPATH) $< -o $@ $(GPU_LDLIBS)

$(BUILD)/gpu/launch_overhead: bench/launch_overhead.cu
	@mkdir -p $(@D)
	$(NVCC) $(GPU_NVCCFLAGS) -cudart shared $(GPU_RPATH) $< -o $@ $(GPU_LDLIBS)

# kcheck's own comparison kernels (both chunk sizes) and the L2 flush, timed
# (static cudart).
$(BUILD)/gpu/own_kernels: bench/own_kernels.cu libkcheck/exec/kernels/perturb_kernels.cu \
                          libkcheck/exec/kernels/region_hash.h libkcheck/exec/kernels/cmp_table.h
	@mkdir -p $(@D)
	$(NVCC) $(GPU_NVCCFLAGS) -cudart static $< -o $@ $(GPU_LDLIBS)
GPU_BINS += $(BUILD)/gpu/own_kernels

# Planted races and clean kernels (static cudart: no libcudart needed at run time).
$(BUILD)/gpu/races: test/gpu/races.cu
	@mkdir -p $(@D)
	$(NVCC) $(GPU_NVCCFLAGS) -cudart static $< -o $@ $(GPU_LDLIBS)

# The planted race corpus (test/gpu/races/run_corpus.sh): line info for
# racecheck's and kcheck's evidence; PTX embedded (nvcc's default for
# -arch=sm_90), which the intra-block strategies rewrite.
$(BUILD)/gpu/corpus: test/gpu/races/corpus.cu
	@mkdir -p $(@D)
	$(NVCC) -O2 -lineinfo -arch=sm_90 -cudart static $< -o $@ $(GPU_LDLIBS)
GPU_BINS += $(BUILD)/gpu/corpus

# The race corpus without PTX (test/gpu/run_gpu_races_sass.sh): SASS for
# sm_90 only, no PTX in the fatbin and no -lineinfo (whose line table would
# carry the PTX text), as PyTorch's and cuBLAS's kernels come.
$(BUILD)/gpu/corpus_sass: test/gpu/races_sass/corpus_sass.cu
	@mkdir -p $(@D)
	$(NVCC) -O2 -gencode arch=compute_90,code=sm_90 -cudart static $< -o $@ $(GPU_LDLIBS)
GPU_BINS += $(BUILD)/gpu/corpus_sass

# Planted contract bugs and correct kernels (static cudart, like races).
$(BUILD)/gpu/contract_bugs: test/gpu/contract_bugs.cu
	@mkdir -p $(@D)
	$(NVCC) $(GPU_NVCCFLAGS) -cudart static $< -o $@ $(GPU_LDLIBS)

# The world-lock tests on a GPU: the stand-in app, linked to the real driver,
# with the stand-in's scale kernel as PTX; the lock microbenchmark.
$(BUILD)/gpu/app_shared: test/apps/app_shared.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) -I$(CUDA_HOME)/include -o $@ $< $(GPU_LDLIBS) -lpthread
$(BUILD)/gpu/scale.ptx: test/gpu/scale.cu
	@mkdir -p $(@D)
	$(NVCC) -ptx -arch=compute_90 -o $@ $<
$(BUILD)/gpu/world_lock: bench/world_lock.c libkcheck/base/world.c libkcheck/base/log.c libkcheck/base/world.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) -Ilibkcheck/base -o $@ bench/world_lock.c libkcheck/base/world.c libkcheck/base/log.c -lpthread
GPU_BINS += $(BUILD)/gpu/app_shared $(BUILD)/gpu/scale.ptx $(BUILD)/gpu/world_lock

# CUDA graphs through the runtime (kcheck's node-by-node graph checks).
$(BUILD)/gpu/graphs: test/gpu/graphs.cu
	@mkdir -p $(@D)
	$(NVCC) $(GPU_NVCCFLAGS) -cudart static $< -o $@ $(GPU_LDLIBS)
GPU_BINS += $(BUILD)/gpu/graphs

.PHONY: gpu-bins test-gpu bench-gpu test-gpu-world test-gpu-rel test-gpu-checks test-gpu-contracts bench-gpu-checks \
        bench-gpu-targets bench-gpu-profile
gpu-bins: $(GPU_BINS)

# Built with everything else where nvcc exists, so a copied build/ has them.
ifneq ($(wildcard $(NVCC)),)
all: gpu-bins
endif

GPU_SCRIPT_ENV = BUILD='$(BUILD)' CUDA_HOME='$(CUDA_HOME)' NVCC='$(NVCC)' PYTHON='$(PYTHON)'

# Both suites run; the status is nonzero when either failed. The contract
# suite writes into the contracts/ subdirectory of the same output folder.
test-gpu:
	@if ! nvidia-smi >/dev/null 2>&1; then echo "SKIP: no GPU"; exit 0; fi; \
	out='$(GPU_OUT)'; out="$${out:-$${OUT:-gpu-out}}"; rc=0; \
	$(GPU_SCRIPT_ENV) bash test/gpu/run_gpu_tests.sh "$$out" || rc=$$?; \
	$(GPU_SCRIPT_ENV) bash test/gpu/run_gpu_contracts.sh "$$out/contracts" || rc=$$?; \
	$(GPU_SCRIPT_ENV) bash test/gpu/run_gpu_torch.sh "$$out/torch" || rc=$$?; \
	exit $$rc

# The PyTorch binding alone (run_gpu_torch.sh; results in $(GPU_OUT)).
.PHONY: test-gpu-torch
test-gpu-torch:
	@if ! nvidia-smi >/dev/null 2>&1; then echo "SKIP: no GPU"; exit 0; fi; \
	$(GPU_SCRIPT_ENV) bash test/gpu/run_gpu_torch.sh $(GPU_OUT)

.PHONY: test-gpu-devmem
test-gpu-devmem: $(BUILD)/libkcheck.so
	@if ! nvidia-smi >/dev/null 2>&1; then echo "SKIP: no GPU"; exit 0; fi; \
	$(GPU_SCRIPT_ENV) bash test/gpu/run_gpu_devmem.sh $(GPU_OUT)

# The PyTorch binding's cost on the GPT-style step at bench/run_targets.sh's
# size (6 layers, d 512, seq 256, batch 16), plain and --torch alternating
# for 12 rounds of 100 steps (~5 min; bench/results/2026-12-02-torch-seq256-cb03eb3.md
# ran this command from a script); `make bench-gpu-torch BENCH_TORCH_MODEL=`
# runs the bench's default size (seq 128).
BENCH_TORCH_MODEL ?= --layers 6 --d-model 512 --heads 8 --seq 256 --batch 16
BENCH_TORCH_BUDGET ?= 290
.PHONY: bench-gpu-torch
bench-gpu-torch:
	@if ! nvidia-smi >/dev/null 2>&1; then echo "SKIP: no GPU"; exit 0; fi; \
	$(GPU_SCRIPT_ENV) KC_TORCH_PARTS=bench KC_BENCH_STEPS=100 KC_BENCH_OPTS="-o torch_exit_budget=0" \
	  KC_BENCH_MODEL="$(BENCH_TORCH_MODEL)" KC_BENCH_CONFIGS="plain torch" KC_BENCH_ROUNDS=12 \
	  KC_BENCH_CONFIGS_LATER="torch plain" KC_TIMEOUT=40 KC_BUDGET=$(BENCH_TORCH_BUDGET) \
	  bash test/gpu/run_gpu_torch.sh $(GPU_OUT)

# Serving throughput measured with confidence: the harness's decode loop
# (continuous batching, CUDA graphs, 4 request threads) plain and under
# --serving, KC_HARNESS_REPEAT back-to-back pairs of KC_HARNESS_SECONDS
# each (their order alternating; pinned to SERVING_CPUS); harness.md gives
# the median of the paired ratios with a bootstrap 95% interval.
# `make bench-gpu-serving SERVING_OPTS=stream_races=1` measures the audit
# mode instead (those options in every paired --serving run).
SERVING_PAIRS ?= 10
SERVING_SECONDS ?= 20
SERVING_OPTS ?=
SERVING_CPUS ?= 0-7
SERVING_BUDGET ?= 570
.PHONY: bench-gpu-serving
bench-gpu-serving:
	@if ! nvidia-smi >/dev/null 2>&1; then echo "SKIP: no GPU"; exit 0; fi; \
	$(GPU_SCRIPT_ENV) KC_HARNESS_REPEAT=$(SERVING_PAIRS) KC_HARNESS_SECONDS=$(SERVING_SECONDS) \
	  KC_HARNESS_SERVING_OPTS='$(SERVING_OPTS)' KC_HARNESS_CPUS='$(SERVING_CPUS)' KC_HARNESS_BUGS=none \
	  KC_HARNESS_CHECKS=0 KC_HARNESS_TRACKING=0 KC_HARNESS_BUDGET=$(SERVING_BUDGET) \
	  bash test/gpu/serving/run_serving_harness.sh $(GPU_OUT)

bench-gpu:
	@if ! nvidia-smi >/dev/null 2>&1; then echo "SKIP: no GPU"; exit 0; fi; \
	$(GPU_SCRIPT_ENV) bash bench/run_bench.sh $(GPU_OUT)

test-gpu-checks:
	@if ! nvidia-smi >/dev/null 2>&1; then echo "SKIP: no GPU"; exit 0; fi; \
	$(GPU_SCRIPT_ENV) bash test/gpu/run_gpu_checks.sh $(GPU_OUT)

.PHONY: test-gpu-races
test-gpu-races:
	@if ! nvidia-smi >/dev/null 2>&1; then echo "SKIP: no GPU"; exit 0; fi; \
	$(GPU_SCRIPT_ENV) bash test/gpu/races/run_corpus.sh $(GPU_OUT)

.PHONY: test-gpu-races-sass
test-gpu-races-sass:
	@if ! nvidia-smi >/dev/null 2>&1; then echo "SKIP: no GPU"; exit 0; fi; \
	$(GPU_SCRIPT_ENV) bash test/gpu/run_gpu_races_sass.sh $(GPU_OUT)

# The Sanitizer route on SASS-only kernels (run_gpu_sanitizer.sh).
.PHONY: test-gpu-sanitizer
test-gpu-sanitizer:
	@if ! nvidia-smi >/dev/null 2>&1; then echo "SKIP: no GPU"; exit 0; fi; \
	$(GPU_SCRIPT_ENV) bash test/gpu/run_gpu_sanitizer.sh

test-gpu-contracts:
	@if ! nvidia-smi >/dev/null 2>&1; then echo "SKIP: no GPU"; exit 0; fi; \
	$(GPU_SCRIPT_ENV) bash test/gpu/run_gpu_contracts.sh $(GPU_OUT)

test-gpu-world:
	@if ! nvidia-smi >/dev/null 2>&1; then echo "SKIP: no GPU"; exit 0; fi; \
	$(GPU_SCRIPT_ENV) bash test/gpu/run_gpu_world.sh $(GPU_OUT)

test-gpu-rel:
	@if ! nvidia-smi >/dev/null 2>&1; then echo "SKIP: no GPU"; exit 0; fi; \
	$(GPU_SCRIPT_ENV) bash test/gpu/run_gpu_rel.sh $(GPU_OUT)

# The whole validation of one commit (gates in two lanes, then
# the benchmarks alone): test/gpu/run_gpu_validation.sh.
.PHONY: test-gpu-validation
test-gpu-validation:
	@if ! nvidia-smi >/dev/null 2>&1; then echo "SKIP: no GPU"; exit 0; fi; \
	$(GPU_SCRIPT_ENV) bash test/gpu/run_gpu_validation.sh $(GPU_OUT)

bench-gpu-checks:
	@if ! nvidia-smi >/dev/null 2>&1; then echo "SKIP: no GPU"; exit 0; fi; \
	$(GPU_SCRIPT_ENV) bash bench/run_check_bench.sh $(GPU_OUT)

bench-gpu-targets:
	@if ! nvidia-smi >/dev/null 2>&1; then echo "SKIP: no GPU"; exit 0; fi; \
	$(GPU_SCRIPT_ENV) bash bench/run_targets.sh $(GPU_OUT)

bench-gpu-profile:
	@if ! nvidia-smi >/dev/null 2>&1; then echo "SKIP: no GPU"; exit 0; fi; \
	$(GPU_SCRIPT_ENV) bash bench/run_profile.sh $(GPU_OUT)

endif

# Convolutions under the PyTorch binding: fp32 with TF32 on and off, bf16,
# channels_last, transposed, backward; planted wrong convolutions
# (test/gpu/torch_conv.py; results in $(GPU_OUT)/torch-conv-results.txt).
.PHONY: test-gpu-conv
test-gpu-conv: $(BUILD)/libkcheck.so
	@if ! nvidia-smi >/dev/null 2>&1; then echo "SKIP: no GPU"; exit 0; fi; \
	KCHECK_LIB='$(abspath $(BUILD))/libkcheck.so' $(PYTHON) test/gpu/torch_conv.py $(GPU_OUT)
