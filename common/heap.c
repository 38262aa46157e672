/*
 * common/heap.c: the out-of-line parts of the indexed binary min-heap
 * (common.h); the sifts are inline there, on the flow network's hot path.
 */
#include <stdlib.h>

#include "podplan/common.h"

void pp_iheap_heapify(pp_iheap *h, int32_t *pos) {
    for (size_t i = h->n / 2; i-- > 0;) pp_iheap_down(h, pos, i);
}

void pp_iheap_fini(pp_iheap *h) {
    free(h->a);
    h->a = NULL;
    h->n = h->cap = 0;
}
