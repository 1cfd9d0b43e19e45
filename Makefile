# kcheck — top-level build. `make` builds build/libkcheck.so and the front
# end; `make test` runs everything that needs no GPU (under ASan+UBSan);
# `make test-gpu` and `make bench` run on a machine with a GPU.
#
# Each folder owns a fragment (*/module.mk) so the parts build alone.

CC        ?= cc
BUILD     ?= build
PREFIX    ?= /usr/local
DESTDIR   ?=
CUDA_HOME ?= /usr/local/cuda
PYTHON    ?= python3

WARNFLAGS := -Wall -Wextra -Werror -Wshadow -Wundef -Wstrict-prototypes \
             -Wmissing-prototypes -Wno-unused-parameter
OPTFLAGS  ?= -O2 -g
CSTD      := -std=c11 -D_GNU_SOURCE
CFLAGS_COMMON = $(CSTD) $(OPTFLAGS) $(WARNFLAGS) -fPIC
# Sanitizer build used by `make test` (SAN= disables it).
SAN       ?= address,undefined
SANFLAGS  := $(if $(SAN),-fsanitize=$(SAN) -fno-omit-frame-pointer -fno-sanitize-recover=all,)
# The test build also aborts on a broken internal invariant (KC_ASSERT).
CHECKFLAGS := -DKC_CHECKED

.PHONY: all test test-cpu test-gpu bench format lint install clean defs
all:

include oracle/module.mk
include libkcheck/module.mk
include test/module.mk

# Every folder of ours, for the linters.
KC_LINT_INC = $(foreach r,$(KC_ROOMS),-I libkcheck/$(r)) -I contract -I oracle -I shim -I gates

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

lint:
	clang-format --dry-run -Werror $$(git ls-files '*.c' '*.h')
	cppcheck --quiet --error-exitcode=1 --enable=warning,portability,performance \
	  --inline-suppr --suppress=missingIncludeSystem $(KC_LINT_INC) -I oracle -I shim -I gates \
	  '-DElfW(t)=Elf64_##t' $$(git ls-files '*.c')
	clang-tidy --quiet $$(git ls-files 'libkcheck/*/*.c' 'contract/*.c' 'shim/*.c' 'gates/*.c' 'oracle/*.c') -- \
	  $(CSTD) $(KC_LINT_INC) -I $(CUDA_HOME)/include

# python/kcheck/_defs.py: the gate, status, fill and oracle-op vocabularies
# for the Python side, generated from the .def files (committed; `make
# docs-test` fails while it is stale).
defs:
	$(PYTHON) scripts/gen_defs.py

clean:
	rm -rf $(BUILD)
