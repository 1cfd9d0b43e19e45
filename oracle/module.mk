# oracle/ build fragment: the numerical oracle as a static library (normal
# and sanitizer builds), its CPU tests and the exact-dot benchmark.
# The op-level half keeps its own list in oracle/module_b.mk (ORACLE_SRCS_B,
# ORACLE_TESTS_B); both halves link into the same library.
-include oracle/module_b.mk

ORACLE_A_SRCS := oracle/formats.c oracle/exact.c oracle/mpfr_util.c oracle/elementwise.c oracle/ops.c
ORACLE_SRCS := $(ORACLE_A_SRCS) $(ORACLE_SRCS_B)
ORACLE_LIBS := -lmpfr -lgmp -lm -lpthread
ORACLE_OBJS := $(ORACLE_SRCS:%.c=$(BUILD)/%.o)
ORACLE_SAN_OBJS := $(ORACLE_SRCS:%.c=$(BUILD)/san/%.o)
ORACLE_TESTS_A := $(BUILD)/test/oracle/test_formats $(BUILD)/test/oracle/test_exact \
                  $(BUILD)/test/oracle/test_elementwise $(BUILD)/test/oracle/test_ops
# ctypes target of test/oracle/xcheck_formats.py (no sanitizer: it is
# loaded into the Python interpreter)
ORACLE_XCHECK_SO := $(BUILD)/oracle/xcheck_formats.so

.PHONY: oracle-test oracle-bench
all: $(BUILD)/liboracle.a
test-cpu: oracle-test
bench-cpu: oracle-bench

$(BUILD)/oracle/%.o: oracle/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) -MMD -MP -c $< -o $@

$(BUILD)/san/oracle/%.o: oracle/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) $(SANFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/liboracle.a: $(ORACLE_OBJS)
	@mkdir -p $(@D)
	rm -f $@
	ar rcs $@ $^

$(BUILD)/san/liboracle.a: $(ORACLE_SAN_OBJS)
	@mkdir -p $(@D)
	rm -f $@
	ar rcs $@ $^

$(BUILD)/test/oracle/%: test/oracle/%.c $(BUILD)/san/liboracle.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) $(SANFLAGS) -I oracle -MMD -MP $< $(BUILD)/san/liboracle.a \
	  $(ORACLE_LIBS) -o $@

$(ORACLE_XCHECK_SO): $(BUILD)/oracle/formats.o
	$(CC) -shared -o $@ $^ $(ORACLE_LIBS)

$(BUILD)/bench/oracle_dot: bench/oracle_dot.c $(BUILD)/liboracle.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) -I oracle $< $(BUILD)/liboracle.a $(ORACLE_LIBS) -o $@

# Runs every test (A's and B's) even after a failure; fails if any did.
oracle-test: $(ORACLE_TESTS_A) $(ORACLE_TESTS_B) $(ORACLE_XCHECK_SO)
	@fail=0; for t in $(ORACLE_TESTS_A) $(ORACLE_TESTS_B); do \
	  echo "== $$t"; $$t || { echo "FAIL $$t"; fail=1; }; done; \
	if $(PYTHON) -c 'import numpy, ml_dtypes' 2>/dev/null; then \
	  echo "== test/oracle/xcheck_formats.py"; \
	  $(PYTHON) test/oracle/xcheck_formats.py $(ORACLE_XCHECK_SO) || { echo "FAIL xcheck_formats"; fail=1; }; \
	else echo "SKIP xcheck_formats.py: $(PYTHON) lacks numpy/ml_dtypes"; fi; \
	exit $$fail

oracle-bench: $(BUILD)/bench/oracle_dot
	$(BUILD)/bench/oracle_dot

-include $(ORACLE_OBJS:.o=.d) $(ORACLE_SAN_OBJS:.o=.d) $(ORACLE_TESTS_A:=.d)
