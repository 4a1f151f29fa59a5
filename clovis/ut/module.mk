# clovis/ut — bad-input suite of the Clovis API (clovis_bad_ut.c).
UT_SRCS += clovis/ut/clovis_bad_ut.c
