# layouts/ — how an object's blocks map onto devices.
LIB_SRCS +=
UT_SRCS +=
