#!/bin/sh
# test_sym_helper.sh - the symbolizer's tests with every read of a process
# and its files made by the helper process (wallclock-symd), as collectd
# makes them, instead of in the test's own process.
WC_SYM_HELPER=$(pwd)/wallclock-symd exec ./tests/unit/sym/test_sym
