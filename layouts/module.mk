# layouts/ — how an object's blocks map onto devices.
LIB_SRCS += layouts/layout.c layouts/plain.c
UT_SRCS += layouts/ut/layout_ut.c
LIB_SRCS += layouts/pdclust.c layouts/ec.c
UT_SRCS += layouts/ut/pdclust_ut.c
