# clovis/cli — the strata command-line tool, linked with the static library.
CLI_SRCS := $(wildcard clovis/cli/*.c)
CLI_OBJS := $(CLI_SRCS:%.c=$(BUILD)/obj/%.o)
BINS += $(BUILD)/strata

$(BUILD)/strata: $(CLI_OBJS) $(BUILD)/libstrata.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(PKG_LIBS) -lpthread
