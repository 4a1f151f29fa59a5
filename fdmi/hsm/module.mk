# fdmi/hsm — strata-hsm, the HSM plugin (issue 31 point 4): a Clovis client
# and FDMI consumer with a SQLite catalog that moves composite objects
# between tiers by a YAML policy (libyaml).  See fdmi/hsm/README.md.
HSM_SRCS := $(addprefix fdmi/hsm/,hsm_main.c hsm.c hsm_policy.c) fdmi/plugin/plugin.c
HSM_OBJS := $(HSM_SRCS:%.c=$(BUILD)/obj/%.o)
BINS += $(BUILD)/strata-hsm
$(HSM_OBJS): CFLAGS += $(shell pkg-config --cflags sqlite3 2>/dev/null)
$(BUILD)/strata-hsm: $(HSM_OBJS) $(BUILD)/libstrata.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(shell pkg-config --libs sqlite3 2>/dev/null) $(PKG_LIBS) -lpthread
# Unit tests of the policy parser (suite "hsm_policy" of ut_main) and of
# the HSM engine on embedded stores with the device model (suite "hsm").
UT_SRCS += fdmi/hsm/ut/hsm_policy_ut.c fdmi/hsm/hsm_policy.c \
	fdmi/hsm/ut/hsm_ut.c fdmi/hsm/hsm.c fdmi/plugin/plugin.c
UT_LIBS += $(shell pkg-config --libs sqlite3 2>/dev/null)
