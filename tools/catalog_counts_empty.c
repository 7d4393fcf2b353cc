/* catalog_counts_empty.c — the counts table of the first-stage library that
 * tools/catalog_counts.c links against: no model counted (mk/counts.mk). */
#include "read/catalog_counts.h"

const vf__catalog_counts vf__catalog_counts_rows[1] = {{0}};
const size_t vf__catalog_counts_n = 0;
