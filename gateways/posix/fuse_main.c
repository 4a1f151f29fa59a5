#define FUSE_USE_VERSION 35
#include <fuse_lowlevel.h>
int main(void) { return 1; } /* placeholder: being written */
