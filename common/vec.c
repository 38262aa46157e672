/*
 * common/vec.c: the growth step of PP_VEC_RESERVE (common.h), out of line
 * so that every push site is a compare and a store.
 */
#include "podplan/common.h"

void *pp_vec_grow(void *p, size_t *cap, size_t need, size_t elem,
                  size_t first) {
    size_t c = *cap ? *cap : (first ? first : 1);
    while (c < need) {
        if (c > SIZE_MAX / 2 / elem)
            pp_oom(); /* no real array gets here: treat as out of memory */
        c *= 2;
    }
    p = pp_xrealloc(p, c * elem);
    *cap = c;
    return p;
}
