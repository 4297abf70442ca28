/* Everything in kernels/common (libnumasweep_common.a). C11 and C++ (extern "C") safe. */
#ifndef NUMASWEEP_H
#define NUMASWEEP_H

#include "ns_buffer.h"
#include "ns_csv.h"
#include "ns_cycle.h"
#include "ns_error.h"
#include "ns_load.h"
#include "ns_oncpu.h"
#include "ns_options.h"
#include "ns_place.h"
#include "ns_policy.h"
#include "ns_size.h"
#include "ns_timing.h"
#include "ns_topo.h"

/* The Makefile defines these (git commit and compiler flags) so --version records them. */
#ifndef NS_BUILD_COMMIT
#define NS_BUILD_COMMIT "unknown"
#endif
#ifndef NS_BUILD_FLAGS
#define NS_BUILD_FLAGS "unknown"
#endif

/* The CPU the kernel is built for (the Makefile's BUILD_INFO): the build host's CPU model, the
 * optimisation flags and the compiler's predefined macros for them. Never printed: the runner
 * reads this string from the binary (numasweep.running.isa) before it runs the kernel, which on a
 * CPU without an instruction set it was compiled for could die of SIGILL before it said anything. */
#ifdef NS_BUILD_MACROS
__attribute__((used)) static const char ns_build_target[] =
    "numasweep-build-target\ncpu=" NS_BUILD_CPU "\nflags=" NS_BUILD_OPT "\nmacros=" NS_BUILD_MACROS "\n";
#endif

#endif
