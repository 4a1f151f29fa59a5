# fdmi/attridx — strata-attridx, the attribute-index plugin (issue 31
# point 5): a Clovis client and FDMI consumer that keeps a Strata index of
# the store's objects by container, tier and size.  See
# fdmi/attridx/README.md.
ATTRIDX_SRCS := $(addprefix fdmi/attridx/,attridx_main.c attridx.c) fdmi/plugin/plugin.c
ATTRIDX_OBJS := $(ATTRIDX_SRCS:%.c=$(BUILD)/obj/%.o)
BINS += $(BUILD)/strata-attridx
$(BUILD)/strata-attridx: $(ATTRIDX_OBJS) $(BUILD)/libstrata.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(PKG_LIBS) -lpthread
# attridx_fill: the Clovis client of tests/integ/attridx_test.sh (objects
# in a container other than the default one, which the CLI cannot make).
TEST_BINS += $(BUILD)/attridx_fill
$(BUILD)/attridx_fill: $(BUILD)/obj/fdmi/attridx/ut/attridx_fill.o $(BUILD)/libstrata.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(PKG_LIBS) -lpthread
