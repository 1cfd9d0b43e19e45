# oracle/module_b.mk — the op-level half of the oracle (profiles, bounds,
# verdicts, sampling, ops, generators): its sources, CPU tests and the
# sampled-GEMM benchmark. Included by oracle/module.mk.

ORACLE_SRCS_B := oracle/tensor.c oracle/profile.c oracle/bounds.c oracle/verdict.c \
                 oracle/sample.c oracle/adversarial.c oracle/matmul.c oracle/reduce.c \
                 oracle/softmax.c oracle/norm.c oracle/attention.c oracle/recurrence.c \
                 oracle/ew_check.c oracle/grad.c oracle/gather.c oracle/variance.c \
                 oracle/pointwise.c oracle/loss.c oracle/scatter.c oracle/scan.c \
                 oracle/attention_grad.c \
                 oracle/optim.c oracle/norm_params.c \
                 oracle/batch_norm.c oracle/pool.c \
                 oracle/dot.c oracle/conv.c

ORACLE_TESTS_B := $(BUILD)/test/oracle/test_b_matmul $(BUILD)/test/oracle/test_b_rowops \
                  $(BUILD)/test/oracle/test_b_attention $(BUILD)/test/oracle/test_b_recurrence \
                  $(BUILD)/test/oracle/test_b_profile $(BUILD)/test/oracle/test_b_elementwise \
                  $(BUILD)/test/oracle/test_b_regress $(BUILD)/test/oracle/test_b_specials \
                  $(BUILD)/test/oracle/test_b_generators \
                  $(BUILD)/test/oracle/test_b_grad $(BUILD)/test/oracle/test_b_copy \
                  $(BUILD)/test/oracle/test_b_moments $(BUILD)/test/oracle/test_b_pointwise \
                  $(BUILD)/test/oracle/test_b_loss $(BUILD)/test/oracle/test_b_scan \
                  $(BUILD)/test/oracle/test_b_attention_grad \
                  $(BUILD)/test/oracle/test_b_optim $(BUILD)/test/oracle/test_b_norm_grad_params \
                  $(BUILD)/test/oracle/test_b_batch_norm $(BUILD)/test/oracle/test_b_pool \
                  $(BUILD)/test/oracle/test_b_conv

# Tests link the sanitizer library; the pattern rule in module.mk builds
# $(BUILD)/test/oracle/%, these add the shared helper header dependency.
$(ORACLE_TESTS_B): test/oracle/test_b_util.h

$(BUILD)/bench/oracle_gemm: bench/oracle_gemm.c $(BUILD)/liboracle.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) -O3 -I oracle $< $(BUILD)/liboracle.a -lmpfr -lgmp -lm -lpthread -o $@

$(BUILD)/bench/oracle_ops: bench/oracle_ops.c $(BUILD)/liboracle.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) -O3 -I oracle $< $(BUILD)/liboracle.a -lmpfr -lgmp -lm -lpthread -o $@

$(BUILD)/bench/oracle_mm_layout: bench/oracle_mm_layout.c $(BUILD)/liboracle.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) -O3 -I oracle $< $(BUILD)/liboracle.a -lmpfr -lgmp -lm -lpthread -o $@

.PHONY: oracle-bench-gemm oracle-test-b
# Sampled GEMM verdict, then elementwise and gated-delta per-element costs.
oracle-bench-gemm: $(BUILD)/bench/oracle_gemm $(BUILD)/bench/oracle_ops $(BUILD)/bench/oracle_mm_layout
	$(BUILD)/bench/oracle_gemm
	$(BUILD)/bench/oracle_ops
	$(BUILD)/bench/oracle_mm_layout

bench-cpu: oracle-bench-gemm

# B's tests alone (useful while A's half is in flux).
oracle-test-b: $(ORACLE_TESTS_B)
	@fail=0; for t in $(ORACLE_TESTS_B); do echo "== $$t"; $$t || { echo "FAIL $$t"; fail=1; }; done; \
	exit $$fail

-include $(ORACLE_TESTS_B:=.d)
