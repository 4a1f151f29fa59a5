#include "gateways/posix/ns.h"
