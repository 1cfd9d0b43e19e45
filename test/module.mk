# test/ build fragment. `make test` = everything that needs no GPU, under
# AddressSanitizer and UBSan: C unit tests, the oracle's tests, the CPU
# stand-in driver's self-tests and the integration tests (pytest) that run
# applications under LD_PRELOAD=libkcheck.so on the stand-in.

-include test/fakecuda/module.mk
-include test/gpu/module.mk
-include test/fuzz/module.mk

UNIT_TESTS := allocmap options contract limits policy signature asserts findings ptx access region_hash devmem \
              bug_sites byte_verdicts san guardzone
UNIT_OBJS_bug_sites := libkcheck/findings/bug libkcheck/base/log
UNIT_OBJS_devmem := libkcheck/base/devmem libkcheck/base/own libkcheck/base/options libkcheck/base/regex_guard libkcheck/base/log
UNIT_OBJS_ptx := libkcheck/base/ptx_source libkcheck/base/ptx_scan libkcheck/base/ptx_rewrite
UNIT_OBJS_access := libkcheck/base/access
UNIT_OBJS_san := libkcheck/base/san_rec libkcheck/base/cubin_vars libkcheck/base/sass_atomics libkcheck/base/ptx_source \
  libkcheck/base/cubin_cache libkcheck/base/log
UNIT_LIBS_san := -ldl
UNIT_OBJS_byte_verdicts := gates/byte_verdicts
UNIT_OBJS_allocmap := libkcheck/base/allocmap libkcheck/base/log
UNIT_OBJS_guardzone := libkcheck/base/guardzone libkcheck/base/allocmap libkcheck/base/log
UNIT_OBJS_policy := libkcheck/capture/policy libkcheck/capture/serving libkcheck/base/options libkcheck/base/regex_guard libkcheck/base/log
UNIT_OBJS_signature := libkcheck/capture/policy libkcheck/capture/serving libkcheck/base/options libkcheck/base/regex_guard libkcheck/base/log
UNIT_OBJS_asserts := libkcheck/base/log
UNIT_OBJS_findings := gates/findings libkcheck/base/options libkcheck/base/regex_guard libkcheck/base/log
UNIT_OBJS_options := libkcheck/base/options libkcheck/base/regex_guard libkcheck/base/log
UNIT_OBJS_contract := contract/contract contract/attrs contract/contract_expr contract/contract_load contract/contract_api \
                      contract/contract_ann contract/yaml_limits contract/mangle libkcheck/base/regex_guard libkcheck/base/options \
                      libkcheck/base/log
UNIT_OBJS_limits := $(UNIT_OBJS_contract)
UNIT_LIBS_limits = $(UNIT_LIBS_contract)
UNIT_LIBS_contract := $(BUILD)/san/liboracle.a -lyaml -lmpfr -lgmp -lm

define unit_test
$(BUILD)/test/unit/test_$(1): test/unit/test_$(1).c $$(patsubst %,$(BUILD)/san/obj/%.o,$$(UNIT_OBJS_$(1))) \
    $$(filter %.a,$$(UNIT_LIBS_$(1)))
	@mkdir -p $$(@D)
	$$(CC) $$(CFLAGS_COMMON) $$(SANFLAGS) $$(CHECKFLAGS) $$(KC_INC) -Itest/unit -MMD -MP -o $$@ $$(filter %.o %.c,$$^) \
	  $$(UNIT_LIBS_$(1)) -ljansson -lpthread -lm
endef
$(foreach t,$(UNIT_TESTS),$(eval $(call unit_test,$(t))))
-include $(patsubst %,$(BUILD)/test/unit/test_%.d,$(UNIT_TESTS))

.PHONY: unit-test integration-test
unit-test: $(patsubst %,$(BUILD)/test/unit/test_%,$(UNIT_TESTS))
	@set -e; for t in $^; do KC_TEST_SAN_LIB='$(KC_SAN_PIP_LIB)' $$t; done

# ASan must come first in LD_PRELOAD when the preloaded library is built
# with it; leak checking is off because the host programs (python) leak.
ASAN_RT := $(shell $(CC) -print-file-name=libasan.so)
integration-test: $(BUILD)/san/libkcheck.so $(BUILD)/libkcheck.so $(BUILD)/.carried $(FAKECUDA_LIB) $(TEST_APPS)
	KCHECK_TEST_BUILD=$(abspath $(BUILD)) KCHECK_TEST_ASAN_RT=$(ASAN_RT) \
	  $(PYTHON) -m pytest -q test/integration

# The build itself: include paths enforce the layering, header
# dependencies rebuild what a header change affects (test/build/).
.PHONY: build-test
build-test: $(BUILD)/libkcheck.so
	@CC='$(CC)' CSTD='$(CSTD)' KC_ROOMS='$(KC_ROOMS)' KC_INC_oracle='$(KC_INC_oracle)' \
	  $(foreach r,$(KC_ROOMS),KC_INC_$(r)='$(KC_INC_$(r))') \
	  KC_INC_contract='$(KC_INC_contract)' KC_INC_gates='$(KC_INC_gates)' KC_INC_shim='$(KC_INC_shim)' \
	  sh test/build/check_layering.sh
	@KC_ROOMS='$(KC_ROOMS)' BUILD='$(BUILD)' sh test/build/check_room_symbols.sh
	@MAKE='$(MAKE)' BUILD='$(BUILD)' sh test/build/check_deps.sh

# One list per vocabulary: the docs' tables against the .def files (and the
# docs' relative links against the tree), and
# every gate's fixtures findable from its name (test/gates/<id>/fixtures);
# a new gate is at most three hand-written files (scripts/new_gate.py).
.PHONY: docs-test gates-index-test
docs-test:
	$(PYTHON) test/docs/check_tables.py
	$(PYTHON) scripts/gen_defs.py --check
gates-index-test:
	$(PYTHON) test/gates/check_fixtures.py
	CC='$(CC)' KC_INC_gates='$(KC_INC_gates)' $(PYTHON) test/gates/check_new_gate.py

test-cpu: unit-test build-test docs-test gates-index-test fakecuda-test integration-test fuzz-smoke

# 1,024 fresh lint-clean contract mutants under gates=all (the shapes gate
# included), under ASan: 0 crashes, the application's results unchanged
# (about 20 minutes on two cores, so not in `make test`, which runs 24;
# .ci/run runs this after it). The count run is printed at the end.
MUTANTS ?= 1024
MUTANT_SEED ?= 3838
.PHONY: test-mutants
test-mutants: $(BUILD)/san/libkcheck.so $(BUILD)/libkcheck.so $(BUILD)/.carried $(FAKECUDA_LIB) $(TEST_APPS)
	KCHECK_TEST_BUILD=$(abspath $(BUILD)) KCHECK_TEST_ASAN_RT=$(ASAN_RT) \
	  KCHECK_MUTANTS=$(MUTANTS) KCHECK_MUTANT_SEED=$(MUTANT_SEED) \
	  $(PYTHON) -m pytest -q -s test/integration/test_contract_safety.py \
	  -k test_mutated_contracts_all_gates_never_crash
test: test-cpu
bench: bench-cpu

# dlsym(RTLD_NEXT) semantics under kcheck's dlsym hook.
$(BUILD)/test/dlsym/libnext_b.so: test/dlsym/next_b.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) -shared -o $@ $<
$(BUILD)/test/dlsym/libnext_a.so: test/dlsym/next_a.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) -shared -o $@ $< -ldl
$(BUILD)/test/dlsym/next_main: test/dlsym/next_main.c $(BUILD)/test/dlsym/libnext_a.so $(BUILD)/test/dlsym/libnext_b.so
	$(CC) $(CFLAGS_COMMON) -o $@ $< -L$(BUILD)/test/dlsym -Wl,--no-as-needed -lnext_a -lnext_b -ldl -Wl,-rpath,'$$ORIGIN'
integration-test: $(BUILD)/test/dlsym/next_main

# kcheck's per-launch cost on the CPU stand-in (no GPU latency to hide it).
$(BUILD)/bench/passthrough_cpu: bench/passthrough_cpu.c $(FAKECUDA_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) -I$(CUDA_HOME)/include -o $@ $< -L$(BUILD)/fakecuda -lcuda
.PHONY: bench-passthrough-cpu
bench-passthrough-cpu: $(BUILD)/bench/passthrough_cpu $(BUILD)/libkcheck.so
	BUILD=$(BUILD) bench/run_passthrough_cpu.sh
bench-cpu: bench-passthrough-cpu
# The serving profile's cost per eager and per graph launch (bench/run_serving_cpu.sh).
$(BUILD)/bench/serving_cpu: bench/serving_cpu.c $(FAKECUDA_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) -I$(CUDA_HOME)/include -o $@ $< -L$(BUILD)/fakecuda -lcuda

# Several threads launching at once (kcheck's locks and per-thread state).
$(BUILD)/test/app_threads: test/apps/app_threads.c $(FAKECUDA_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) -I$(CUDA_HOME)/include -Itest/fakecuda -o $@ $< \
	  -L$(BUILD)/fakecuda -lcuda -lpthread -Wl,--enable-new-dtags -Wl,-rpath,'$$ORIGIN/../fakecuda'
integration-test: $(BUILD)/test/app_threads

# Threads sharing one allocation, and threads that allocate and free, while
# other threads' launches are checked (the world lock).
$(BUILD)/test/app_shared: test/apps/app_shared.c $(FAKECUDA_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) -I$(CUDA_HOME)/include -o $@ $< \
	  -L$(BUILD)/fakecuda -lcuda -lpthread -Wl,--enable-new-dtags -Wl,-rpath,'$$ORIGIN/../fakecuda'
integration-test: $(BUILD)/test/app_shared

# ThreadSanitizer: the concurrency tests with the TSan build of libkcheck
# (a few seconds; part of `make test`).
.PHONY: test-tsan
test-tsan: $(BUILD)/tsan/libkcheck.so $(BUILD)/.carried $(FAKECUDA_LIB) $(BUILD)/test/app_threads \
           $(BUILD)/test/app_shared $(BUILD)/test/app_graphs
	BUILD=$(BUILD) sh test/tsan/run.sh
test-cpu: test-tsan

# Exit work of the application's own and of a library it links, kept with
# exitcode=N.
$(BUILD)/test/libatexit_lib.so: test/apps/atexit_lib.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) -shared -o $@ $<
$(BUILD)/test/app_atexit: test/apps/app_atexit.c $(FAKECUDA_LIB) $(BUILD)/test/libatexit_lib.so
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) -I$(CUDA_HOME)/include -o $@ $< \
	  -L$(BUILD)/fakecuda -lcuda -L$(BUILD)/test -latexit_lib \
	  -Wl,--enable-new-dtags -Wl,-rpath,'$$ORIGIN/../fakecuda:$$ORIGIN'
integration-test: $(BUILD)/test/app_atexit

# CUDA graphs built by capture and node by node (kcheck's graph replay).
$(BUILD)/test/app_graphs: test/apps/app_graphs.c test/apps/apps.h test/apps/apps_linked.h $(FAKECUDA_DIR)/libcuda.so
	@mkdir -p $(@D)
	$(CC) $(TEST_APP_CFLAGS) $< -o $@ $(TEST_APP_LDFLAGS) -L$(FAKECUDA_DIR) -lcuda
integration-test: $(BUILD)/test/app_graphs

# A kernel that writes its input when re-run: each re-run must start from the restored input.
$(BUILD)/test/app_rerun: test/apps/app_rerun.c test/apps/apps.h test/apps/apps_linked.h $(FAKECUDA_DIR)/libcuda.so
	@mkdir -p $(@D)
	$(CC) $(TEST_APP_CFLAGS) $< -o $@ $(TEST_APP_LDFLAGS) -L$(FAKECUDA_DIR) -lcuda
integration-test: $(BUILD)/test/app_rerun

# Work on several streams, ordered correctly or not (stream_races).
$(BUILD)/test/app_streams: test/apps/app_streams.c test/apps/apps.h test/apps/apps_linked.h $(FAKECUDA_DIR)/libcuda.so
	@mkdir -p $(@D)
	$(CC) $(TEST_APP_CFLAGS) $< -o $@ $(TEST_APP_LDFLAGS) -L$(FAKECUDA_DIR) -lcuda
integration-test: $(BUILD)/test/app_streams
