# layouts/ — the redundant layouts: their placement and parity maths
# (pdclust, ec) and the I/O that puts them to work (stripe*: the unit
# layouts' executor, reached by the engine through struct eng_layout_ops).
LIB_SRCS += layouts/pdclust.c layouts/ec.c
UT_SRCS += layouts/ut/pdclust_ut.c
LIB_SRCS += layouts/stripe.c layouts/stripe_read.c layouts/stripe_write.c \
	layouts/stripe_walk.c layouts/stripe_isc.c
