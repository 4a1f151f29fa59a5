# gateways/s3 — strata-s3, the S3 protocol gateway (libmicrohttpd), a plain
# Clovis client linked with the release library.
S3_SRCS := $(addprefix gateways/s3/,s3_main.c s3_auth.c s3_store.c s3_ops.c s3_util.c)
S3_OBJS := $(S3_SRCS:%.c=$(BUILD)/obj/%.o)
BINS += $(BUILD)/strata-s3
$(S3_OBJS): CFLAGS += $(shell pkg-config --cflags libmicrohttpd 2>/dev/null)
$(BUILD)/strata-s3: $(S3_OBJS) $(BUILD)/libstrata.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(shell pkg-config --libs libmicrohttpd 2>/dev/null) $(PKG_LIBS) -lpthread
