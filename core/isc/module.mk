# core/isc — the in-storage compute executor (function shipping, issue 32):
# declarative programs, sandboxed Lua 5.4 (liblua5.4) and trusted native
# shared objects, and the engine side of a shipped call (isc_eng.c).
# See core/isc/README.md and docs/isc.md.
LIB_SRCS += core/isc/isc_fn.c core/isc/isc_out.c core/isc/isc_decl.c \
	core/isc/isc_lua.c core/isc/isc_native.c core/isc/isc_eng.c
# Suite "isc" of ut_main: the executor alone, in memory.
UT_SRCS += core/isc/ut/isc_ut.c
# A sample native function the suite loads (beside ut_main), built alone
# from the self-contained ABI header, as a function's author would.
TEST_BINS += $(BUILD)/isc_native_fn.so
$(BUILD)/isc_native_fn.so: core/isc/ut/native_fn.c core/isc/isc_native.h
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -Wall -Wextra -Werror -O2 -g -shared -fPIC -I. -o $@ $<
$(BUILD)/ut_main: | $(BUILD)/isc_native_fn.so
