# clovis/ut — bad-input suites of the Clovis API: "clovis_bad"
# (clovis_bad_ut.c) and "clovis_bad_store" (clovis_bad_store_ut.c), sharing
# the helpers declared in clovis_bad_ut.h.
UT_SRCS += clovis/ut/clovis_bad_ut.c clovis/ut/clovis_bad_store_ut.c
