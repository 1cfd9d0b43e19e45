# test/fuzz/module.mk — libFuzzer harnesses (clang, -fsanitize=fuzzer,
# address,undefined: classes of bugs gcc's flags in `make test` do not see).
#
#   make fuzz           each harness for FUZZ_SECONDS (default 60) from the
#                       committed corpus; new inputs go to $(BUILD)/fuzz/corpus
#   make fuzz-smoke     each for FUZZ_SMOKE_SECONDS (5), part of `make test`
#   make fuzz-bins      just build them
# A crash leaves crash-* / timeout-* files in $(BUILD)/fuzz/; add a minimised
# one to test/fuzz/corpus/<harness>/ together with the fix.

FUZZ_CC       ?= clang
FUZZ_SECONDS  ?= 60
FUZZ_SMOKE_SECONDS ?= 5
FUZZ_NAMES    := contract expr options
FUZZ_DIR      := $(BUILD)/fuzz
FUZZ_SAN      := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS    = $(CSTD) -O1 -g $(WARNFLAGS) $(FUZZ_SAN) -fsanitize=fuzzer-no-link $(KC_INC)
FUZZ_LIB_SRCS := contract/contract.c contract/attrs.c contract/contract_expr.c contract/contract_load.c \
                 contract/contract_api.c contract/contract_ann.c contract/yaml_limits.c contract/mangle.c \
                 libkcheck/base/options.c libkcheck/base/log.c libkcheck/base/regex_guard.c $(ORACLE_SRCS)
FUZZ_LIB_OBJS := $(patsubst %.c,$(FUZZ_DIR)/obj/%.o,$(FUZZ_LIB_SRCS))
FUZZ_BINS     := $(patsubst %,$(FUZZ_DIR)/fuzz_%,$(FUZZ_NAMES))
# The harness's options: quiet, bounded memory and time per input.
FUZZ_RUN_FLAGS = -rss_limit_mb=2048 -timeout=10 -print_final_stats=1

$(FUZZ_DIR)/obj/%.o: %.c $(KC_HDRS) $(wildcard oracle/*.h oracle/*.def)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Ioracle -c $< -o $@

$(FUZZ_DIR)/fuzz_%: test/fuzz/fuzz_%.c $(FUZZ_LIB_OBJS)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_LIB_OBJS) \
	  -lyaml -ljansson -lmpfr -lgmp -lm -lpthread

.PHONY: fuzz fuzz-smoke fuzz-bins
fuzz-bins: $(FUZZ_BINS)

# fuzz_run SECONDS: every harness from a fresh copy of its corpus.
define fuzz_run
	@set -e; for n in $(FUZZ_NAMES); do \
	  mkdir -p $(FUZZ_DIR)/corpus/$$n; \
	  echo "fuzz: $$n for $(1) s"; \
	  (cd $(FUZZ_DIR) && ./fuzz_$$n $(FUZZ_RUN_FLAGS) -max_total_time=$(1) \
	    corpus/$$n $(abspath test/fuzz/corpus/$$n) 2>fuzz_$$n.log) || \
	    { tail -n 40 $(FUZZ_DIR)/fuzz_$$n.log; echo "fuzz: $$n FAILED (see $(FUZZ_DIR))"; exit 1; }; \
	  grep -h '^stat::number_of_executed_units' $(FUZZ_DIR)/fuzz_$$n.log | sed "s/^/fuzz: $$n /"; \
	done
endef

fuzz: $(FUZZ_BINS)
	$(call fuzz_run,$(FUZZ_SECONDS))
fuzz-smoke: $(FUZZ_BINS)
	$(call fuzz_run,$(FUZZ_SMOKE_SECONDS))
