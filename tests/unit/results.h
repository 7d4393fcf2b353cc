/* results.h — the library's result objects with their fields in view: the
 * unit tests are white-box and read what vramfit.h hands out opaque. */
#ifndef VF_TEST_RESULTS_H
#define VF_TEST_RESULTS_H

#include "memory/memory.h"
#include "answer/fit_internal.h"
#include "load/load_internal.h"

#endif
