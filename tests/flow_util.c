/*
 * tests/flow_util.c: helpers shared by test_engine.c, test_maxmin.c and
 * test_flow.c (flow_util.h).
 */
#include "flow_util.h"

bool close_rel(double got, double want, double rel) {
    if (got == want) return true;
    return fabs(got - want) <= rel * fmax(fabs(want), fabs(got));
}

uint64_t rng_state;
uint64_t rnd(void) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
int rnd_int(int lo, int hi) {
    return lo + (int)(rnd() % (uint64_t)(hi - lo + 1));
}
double rnd_unit(void) {
    return (double)(rnd() >> 11) * 0x1p-53;
}

double g_uniform_cap;

void random_inst(inst *in, int groups, size_t nl, size_t nf) {
    in->nl = nl;
    in->nf = nf;
    static const double caps[] = {1, 2, 2.5, 10, 10, 40};
    for (size_t l = 0; l < in->nl; l++)
        in->cap[l] = rnd() % 2 ? caps[rnd() % 6] : 1 + 99 * rnd_unit();
    if (g_uniform_cap > 0)
        for (size_t l = 0; l < in->nl; l++) in->cap[l] = g_uniform_cap;
    size_t per = (in->nl + (size_t)groups - 1) / (size_t)groups;
    in->off[0] = 0;
    for (size_t f = 0; f < in->nf; f++) {
        int len = rnd_int(1, 6);
        size_t g = (size_t)rnd_int(0, groups - 1);
        int32_t *p = in->links + in->off[f];
        int n = 0;
        for (int tries = 0; n < len && tries < 50; tries++) {
            size_t l = rnd() % 8 == 0 ? rnd() % in->nl : g * per + rnd() % per;
            if (l >= in->nl) continue;
            bool dup = false;
            for (int k = 0; k < n; k++) dup |= p[k] == (int32_t)l;
            if (!dup) p[n++] = (int32_t)l;
        }
        if (n == 0) p[n++] = 0;
        in->off[f + 1] = in->off[f] + n;
    }
}

void solve(size_t nl, const double *cap, size_t nf, const int32_t *off,
           const int32_t *links, double *rates) {
    pp_error e = PP_ERROR_INIT;
    int rc = pp_maxmin_solve(nl, cap, nf, off, links, rates, &e);
    if (rc != 0) {
        print_error("pp_maxmin_solve: %s\n", e.msg);
        fail();
    }
}
