/*
 * fault.h — fault-injection points, compiled in test builds only.
 *
 * A point is named by a string.  In test builds (-DSTRATA_FAULT_INJECT)
 * FAULT_HIT("tier.write") returns true when the point is armed, so the code
 * around it takes its error path; in release builds it is the constant false
 * and costs nothing.  Points are armed by fault_arm() from tests, or through
 * the STRATA_FAULT environment variable: "name[:skip[:count]][,name...]"
 * (fire after skip passes, count times; count 0 = forever).
 */
#ifndef STRATA_CORE_FAULT_H
#define STRATA_CORE_FAULT_H

#include <stdbool.h>
#include <stdint.h>

#ifdef STRATA_FAULT_INJECT
bool fault_hit(const char *name);
/** Arm name: let skip hits pass, then fire count times (0 = forever). */
void fault_arm(const char *name, uint32_t skip, uint32_t count);
/** Disarm every point. */
void fault_reset(void);
/** How many times name fired since it was armed. */
uint32_t fault_fired(const char *name);
#define FAULT_HIT(name) fault_hit(name)
#else
#define FAULT_HIT(name) false
#endif

#endif
