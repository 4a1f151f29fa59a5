# fdmi/integrity — strata-integrity, the integrity plugin (issue 31 point
# 5): a Clovis client and FDMI consumer that verifies recently written
# objects once each, with its pending set and log in SQLite.  See
# fdmi/integrity/README.md.
INTEG_SRCS := $(addprefix fdmi/integrity/,integrity_main.c integrity.c) fdmi/plugin/plugin.c
INTEG_OBJS := $(INTEG_SRCS:%.c=$(BUILD)/obj/%.o)
BINS += $(BUILD)/strata-integrity
$(INTEG_OBJS): CFLAGS += $(shell pkg-config --cflags sqlite3 2>/dev/null)
$(BUILD)/strata-integrity: $(INTEG_OBJS) $(BUILD)/libstrata.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(shell pkg-config --libs sqlite3 2>/dev/null) $(PKG_LIBS) -lpthread
