#include "tests/ut.h"
int posix_ns_ut_add(void) { return 0; } /* placeholder */
