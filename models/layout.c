/*
 * models/layout.c: Megatron-core's pipeline layout (--pipeline-model-
 * parallel-layout, TransformerConfig.pipeline_model_parallel_layout): the
 * layers of every virtual pipeline stage spelled out, e.g. DeepSeek-V3's
 * "Et|(tt|)*30mL" on pp 8: 32 virtual stages, so vp 4.
 *
 * The grammar is Megatron-core's (megatron/core/transformer/
 * pipeline_parallel_layer_layout.py, parse_str_to_list): "|" ends a
 * virtual stage; E is the embedding, t a transformer (decoder) layer, L
 * the loss (output layer), m a multi-token-prediction layer; "(X)*n"
 * repeats X n times, then "c*n" repeats one character.  Stage k of the
 * list is chunk k / pp of pipeline rank k % pp, which is podplan's
 * virtual-stage order (sim/train/schedule.c), so the list needs no
 * reordering.  Megatron's validate_layer_layout: E exactly once and first,
 * L exactly once and last, as many t as the model has layers.
 *
 * Differences, each an error rather than a silent change: commas, which
 * Megatron drops as cosmetic, separate SPEC keys here; nested parentheses,
 * which Megatron's regular expressions do not expand either.  E must open
 * virtual stage 0 and L close the last one, where the simulator puts the
 * embedding and the output layer; the m units (multi-token prediction)
 * come just before L, where Megatron-core builds its MTP block (on the
 * last stage, after the decoder), and pp_parallel_validate checks their
 * count against the model's mtp_layers.
 *
 * Storage is run-length (pp_layout in models.h): virtual stages with the
 * same number of layers in a row are one run, stage 0 and the last stage
 * always runs of their own (they carry E and L), so the SPEC prints back
 * in a canonical short form.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models_int.h"

/* Expanded text is bounded: a layout names at most a few thousand units;
 * "(t|)*999999999" is a typo, not a model. */
#define EXPAND_MAX (1 << 20)
#define FIELD "--parallel: layout"
_Static_assert(PP_LAYOUT_RUNS == 32, "the message below says 32");

typedef struct {
    char *s;
    size_t n, cap;
} sbuf;

static int put(sbuf *b, const char *src, size_t n, size_t times, pp_error *e) {
    if (n == 0) times = 1; /* "()*N": nothing N times; just terminate */
    if (n && times > (EXPAND_MAX - b->n) / n)
        return pp_error_set(e, PP_EINPUT,
                            FIELD ": expands to more than %d characters",
                            EXPAND_MAX);
    for (size_t k = 0; k < times; k++) {
        if (b->n + n + 1 > b->cap) {
            b->cap = (b->n + n + 1) * 2;
            b->s = pp_xrealloc(b->s, b->cap);
        }
        memcpy(b->s + b->n, src, n);
        b->n += n;
    }
    if (b->s) b->s[b->n] = '\0';
    return 0;
}

/* "*<digits>" at *p: the count in *times, *p past it.  -1 when absent. */
static int repeat_count(const char **p, size_t *times) {
    const char *q = *p;
    if (*q != '*' || q[1] < '0' || q[1] > '9') return -1;
    q++;
    unsigned long long v = 0;
    while (*q >= '0' && *q <= '9') {
        v = v * 10 + (unsigned long long)(*q - '0');
        if (v > EXPAND_MAX) v = EXPAND_MAX + 1ULL; /* put() reports it */
        q++;
    }
    *times = (size_t)v;
    *p = q;
    return 0;
}

/* Megatron's two substitutions, in its order: every "(X)*n" (X without
 * parentheses) first, then every "c*n". */
static int expand(const char *text, sbuf *out, pp_error *e) {
    sbuf a = {0};
    int rc = put(&a, "", 0, 1, e);
    for (const char *p = text; *p && rc == 0;) {
        if (*p == ')')
            rc = pp_error_set(e, PP_EINPUT,
                              FIELD ": \")\" without its \"(\" in \"%.100s\"",
                              text);
        else if (*p != '(') {
            rc = put(&a, p, 1, 1, e);
            p++;
        } else {
            const char *close = strchr(p + 1, ')');
            const char *open = strchr(p + 1, '(');
            if (!close)
                rc = pp_error_set(e, PP_EINPUT,
                                  FIELD ": \"(\" without its \")\" in "
                                        "\"%.100s\"",
                                  text);
            else if (open && open < close)
                rc = pp_error_set(e, PP_EINPUT,
                                  FIELD ": nested parentheses in \"%.100s\" "
                                        "(Megatron-core does not expand them "
                                        "either)",
                                  text);
            else {
                const char *q = close + 1;
                size_t times;
                if (repeat_count(&q, &times) < 0)
                    rc = pp_error_set(e, PP_EINPUT,
                                      FIELD ": \"(...)\" must be followed by "
                                            "\"*N\" in \"%.100s\"",
                                      text);
                else
                    rc = put(&a, p + 1, (size_t)(close - p - 1), times, e);
                p = q;
            }
        }
    }
    for (const char *p = a.s; rc == 0 && *p;) {
        const char *q = p + 1;
        size_t times;
        if (repeat_count(&q, &times) == 0) {
            rc = put(out, p, 1, times, e);
            p = q;
        } else {
            rc = put(out, p, 1, 1, e);
            p++;
        }
    }
    if (rc == 0 && !out->s) rc = put(out, "", 0, 1, e);
    free(a.s);
    return rc;
}

int pp_layout_parse(const char *text, pp_layout *out, pp_error *e) {
    pp_layout l;
    memset(&l, 0, sizeof l);
    if (strchr(text, ','))
        return pp_error_set(e, PP_EINPUT,
                            FIELD ": commas separate SPEC keys; write the "
                                  "layout without them, got \"%.100s\"",
                            text);
    sbuf x = {0};
    int rc = expand(text, &x, e);
    if (rc < 0) {
        free(x.s);
        return rc;
    }
    /* Count t per stage, checking every unit. */
    int64_t nstage = 1;
    for (const char *p = x.s; *p; p++) nstage += *p == '|';
    int32_t *per = pp_xcalloc((size_t)nstage, sizeof *per);
    int64_t stage = 0, ne = 0, nl = 0;
    const char *why = NULL;
    for (const char *p = x.s; *p && !why; p++) {
        switch (*p) {
        case '|': stage++; break;
        case 't': per[stage]++; break;
        case 'E':
            if (ne++ || p != x.s)
                why = "the embedding (E) must open the first virtual stage, "
                      "once";
            break;
        case 'L':
            if (nl++ || p[1] != '\0')
                why = "the loss (L) must close the last virtual stage, once";
            break;
        case 'm': {
            /* Megatron-core builds the MTP block on the last stage, after
             * its decoder layers (DeepSeek-V3's "...|mL"). */
            const char *q = p + 1;
            while (*q == 'm') q++;
            if (*q != 'L')
                why = "the multi-token-prediction layers (m) must close the "
                      "last virtual stage, just before L";
            l.mtp++;
            break;
        }
        default: why = "expected E, t, m, L, |, (...)*N or c*N"; break;
        }
    }
    free(x.s);
    if (!why && (!ne || !nl))
        why = !ne ? "the embedding (E) is missing (Megatron-core requires it)"
                  : "the loss (L) is missing (Megatron-core requires it; "
                    "in a SPEC write the layout without commas)";
    /* Runs of equal stages; stage 0 (E) and the last (L) alone. */
    for (int64_t s = 0; s < nstage && !why; s++) {
        pp_layout_run *r = l.nrun ? &l.run[l.nrun - 1] : NULL;
        if (r && s != 1 && s != nstage - 1 && r->layers == per[s])
            r->stages++;
        else if (l.nrun == PP_LAYOUT_RUNS)
            why = "more than 32 runs of virtual stages with equal layer "
                  "counts (podplan keeps 32)";
        else
            l.run[l.nrun++] = (pp_layout_run){1, per[s]};
    }
    free(per);
    if (why)
        return pp_error_set(e, PP_EINPUT, FIELD ": %s, got \"%.100s\"", why,
                            text);
    l.stages = (int32_t)nstage;
    *out = l;
    return 0;
}

int64_t pp_layout_layers(const pp_layout *l) {
    int64_t n = 0;
    for (int32_t i = 0; i < l->nrun; i++)
        n += (int64_t)l->run[i].stages * l->run[i].layers;
    return n;
}

int64_t pp_layout_stage(const pp_layout *l, int64_t v) {
    for (int32_t i = 0; i < l->nrun; i++) {
        if (v < l->run[i].stages) return l->run[i].layers;
        v -= l->run[i].stages;
    }
    return 0;
}

int64_t pp_layout_before(const pp_layout *l, int64_t v) {
    int64_t n = 0;
    for (int32_t i = 0; i < l->nrun && v > 0; i++) {
        int64_t k = v < l->run[i].stages ? v : l->run[i].stages;
        n += k * l->run[i].layers;
        v -= k;
    }
    return n;
}

/* Appends to buf[len] at *n, truncating (the caller sizes buf). */
static void app(char *buf, size_t len, size_t *n, const char *fmt, ...) {
    if (*n + 1 >= len) return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf + *n, len - *n, fmt, ap);
    va_end(ap);
    if (k > 0) *n = *n + (size_t)k < len ? *n + (size_t)k : len - 1;
}

char *pp_layout_format(const pp_layout *l, char *buf, size_t len) {
    size_t n = 0;
    if (len) buf[0] = '\0';
    for (int32_t i = 0; i < l->nrun; i++) {
        const pp_layout_run *r = &l->run[i];
        bool last = i == l->nrun - 1;
        if (r->stages > 1) app(buf, len, &n, "(");
        if (i == 0) app(buf, len, &n, "E");
        /* t x n as Megatron reads it back: literal for a few. */
        if (r->layers > 4)
            app(buf, len, &n, "t*%d", (int)r->layers);
        else
            app(buf, len, &n, "%.*s", (int)r->layers, "tttt");
        if (last && l->mtp > 4)
            app(buf, len, &n, "m*%d", (int)l->mtp);
        else if (last)
            app(buf, len, &n, "%.*s", (int)l->mtp, "mmmm");
        if (last) app(buf, len, &n, "L");
        if (r->stages > 1)
            app(buf, len, &n, "|)*%d", (int)r->stages);
        else if (!last)
            app(buf, len, &n, "|");
    }
    return buf;
}
