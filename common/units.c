/*
 * units.c: text with a unit <-> SI doubles (seconds, bytes, bytes per second,
 * FLOP, FLOP/s).
 *
 * The parser never guesses.  Gb (bits) and GB (bytes), GB and GiB, FLOPS (a
 * rate) and FLOPs (a count) are all different, and a spelling that people
 * use for two things ("KB", "GBps") is refused with a reason that says how
 * to write it.  Every message starts "expected <kind> such as <examples>"
 * so a reader knows at once what the field wants.
 *
 * Exactness: a decimal prefix is not applied by multiplying by an inexact
 * double such as 1e-6; it is added to the number's own decimal exponent and
 * strtod rounds once, so "1.5us" is the double nearest 1.5e-6 and "312TFLOPS"
 * is exactly 3.12e14.  What is left (1/8 for bits, 1024^k, 60, 3600, 86400)
 * is a single multiplication, exact for 1/8 and 1024^k.
 *
 * The number is handed to strtod without its decimal point ("1.5" becomes
 * "15e-1"), so the result does not depend on LC_NUMERIC.
 */
#include "podplan/common.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Pseudo-kinds: units known only so that refusing them can say why. */
enum { Q_BITS = PP_Q__COUNT, Q_AMBIG };

typedef struct {
    const char *sym;
    int kind;        /* a pp_qkind, Q_BITS or Q_AMBIG */
    int exp10;       /* decimal prefix, folded into the number's exponent */
    double mul;      /* 1, 1/8 (bits), 1024^k, or 60/3600/86400 (time) */
    const char *why; /* Q_AMBIG only: what to write instead */
} unit_def;

#define U(s, k, e, m)                                                          \
    { s, k, e, m, NULL }
/* The six SI prefixes every family has (k M G T P on top of the base). */
#define SI6(k, s, m)                                                           \
    U(s, k, 0, m), U("k" s, k, 3, m), U("M" s, k, 6, m), U("G" s, k, 9, m),    \
        U("T" s, k, 12, m), U("P" s, k, 15, m)
#define AMB(s, w)                                                              \
    { s, Q_AMBIG, 0, 0, w }
#define AMB_BPS(p)                                                             \
    AMB(p "Bps", "\"" p "Bps\" is ambiguous: write " p "B/s for bytes "        \
                 "or " p "bps for bits per second")

/* One table for every kind: the parser accepts a symbol only under its own
 * kind and uses the others to explain a refusal; the formatter looks its
 * preferred symbols up here, so the two cannot drift apart. */
static const unit_def units[] = {
    U("k", PP_Q_COUNT, 3, 1),
    U("K", PP_Q_COUNT, 3, 1),
    U("M", PP_Q_COUNT, 6, 1),
    U("G", PP_Q_COUNT, 9, 1),
    U("T", PP_Q_COUNT, 12, 1),
    U("P", PP_Q_COUNT, 15, 1),

    SI6(PP_Q_BYTES, "B", 1),
    U("KiB", PP_Q_BYTES, 0, 0x1p10),
    U("MiB", PP_Q_BYTES, 0, 0x1p20),
    U("GiB", PP_Q_BYTES, 0, 0x1p30),
    U("TiB", PP_Q_BYTES, 0, 0x1p40),
    U("PiB", PP_Q_BYTES, 0, 0x1p50),

    /* Bit counts are never a valid quantity; they are here to say so. */
    SI6(Q_BITS, "b", 0.125),
    U("Kb", Q_BITS, 3, 0.125),
    SI6(Q_BITS, "bit", 0.125),

    SI6(PP_Q_BANDWIDTH, "bps", 0.125),
    U("Kbps", PP_Q_BANDWIDTH, 3, 0.125),
    SI6(PP_Q_BANDWIDTH, "b/s", 0.125),
    U("Kb/s", PP_Q_BANDWIDTH, 3, 0.125),
    SI6(PP_Q_BANDWIDTH, "bit/s", 0.125),
    SI6(PP_Q_BANDWIDTH, "B/s", 1),
    U("KiB/s", PP_Q_BANDWIDTH, 0, 0x1p10),
    U("MiB/s", PP_Q_BANDWIDTH, 0, 0x1p20),
    U("GiB/s", PP_Q_BANDWIDTH, 0, 0x1p30),
    U("TiB/s", PP_Q_BANDWIDTH, 0, 0x1p40),
    U("PiB/s", PP_Q_BANDWIDTH, 0, 0x1p50),

    SI6(PP_Q_FLOPS, "FLOP", 1),
    U("EFLOP", PP_Q_FLOPS, 18, 1),
    U("ZFLOP", PP_Q_FLOPS, 21, 1),
    /* "FLOPs" is the plural of FLOP, a count; a rate is FLOPS or FLOP/s. */
    SI6(PP_Q_FLOPS, "FLOPs", 1),
    U("EFLOPs", PP_Q_FLOPS, 18, 1),
    U("ZFLOPs", PP_Q_FLOPS, 21, 1),

    SI6(PP_Q_FLOPRATE, "FLOPS", 1),
    U("EFLOPS", PP_Q_FLOPRATE, 18, 1),
    SI6(PP_Q_FLOPRATE, "FLOP/s", 1),
    U("EFLOP/s", PP_Q_FLOPRATE, 18, 1),

    U("ns", PP_Q_TIME, -9, 1),
    U("us", PP_Q_TIME, -6, 1),
    U("\xc2\xb5s", PP_Q_TIME, -6, 1), /* U+00B5 MICRO SIGN */
    U("\xce\xbcs", PP_Q_TIME, -6, 1), /* U+03BC GREEK SMALL LETTER MU */
    U("ms", PP_Q_TIME, -3, 1),
    U("s", PP_Q_TIME, 0, 1),
    U("min", PP_Q_TIME, 0, 60),
    U("h", PP_Q_TIME, 0, 3600),
    U("d", PP_Q_TIME, 0, 86400),

    /* Spellings that mean 1000 to some readers and 1024 to others, or
     * bytes to some and bits to others. */
    AMB("KB", "\"KB\" is ambiguous: write kB (1000 bytes) or KiB (1024 bytes)"),
    AMB("KB/s", "\"KB/s\" is ambiguous: write kB/s (1000 B/s) or KiB/s "
                "(1024 B/s)"),
    AMB("KBps", "\"KBps\" is ambiguous: write kB/s for bytes or kbps for "
                "bits per second"),
    AMB_BPS(""),
    AMB_BPS("k"),
    AMB_BPS("M"),
    AMB_BPS("G"),
    AMB_BPS("T"),
    AMB_BPS("P"),
};

static const struct {
    const char *name; /* "a ..." (callers skip the "a ") */
    const char *examples;
} kinds[] = {
    [PP_Q_COUNT] = {"a count", "300e9, 300G or 300B"},
    [PP_Q_BYTES] = {"a byte size", "80GB or 80GiB"},
    [PP_Q_BANDWIDTH] = {"a bandwidth", "200Gbps or 25GB/s"},
    [PP_Q_FLOPS] = {"a FLOP count", "3e18FLOP or 3EFLOP"},
    [PP_Q_FLOPRATE] = {"a FLOP rate", "312TFLOPS or 312TFLOP/s"},
    [PP_Q_TIME] = {"a time", "1.5us or 20ms"},
    [PP_Q_RATIO] = {"a ratio", "2:1 or 1.5"},
    [Q_BITS] = {"a bit count", ""},
};

const char *pp_qkind_name(pp_qkind kind) {
    return (unsigned)kind < PP_Q__COUNT ? kinds[kind].name : "a quantity";
}

static const unit_def *find_unit(const char *sym, size_t n) {
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strlen(units[i].sym) == n && memcmp(units[i].sym, sym, n) == 0)
            return &units[i];
    return NULL;
}

/* Exact for n <= 22: every step is an integer below 2^53 times 2^k. */
static double pow10i(int n) {
    double r = 1;
    while (n-- > 0) r *= 10;
    return r;
}

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int
fail(char *why, size_t len, const char *fmt, ...) {
    if (why && len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, len, fmt, ap); /* truncates and NUL-terminates */
        va_end(ap);
    }
    return PP_EINPUT;
}

/* ---- numbers ---------------------------------------------------------- */

#define NUM_MAX_DIGITS 300
#define EXP_CLAMP 100000L /* beyond any double; keeps the sums in range */

typedef struct {
    char digits[NUM_MAX_DIGITS + 2]; /* optional '-' then digits, no point */
    long exp10;                      /* value = digits * 10^exp10 */
    const char *end;                 /* first character after the number */
} number;

static bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

/* Scans [sign] digits [. digits] [e [sign] digits] from s (not past e).
 * Only decimal: no nan, inf or hex, which strtod would take.  An 'e' not
 * followed by digits is left alone ("1.5EFLOP" is 1.5 exa).  Returns 0, 1
 * when there is no number, 2 when it has too many digits. */
static int scan_number(const char *s, const char *e, number *n) {
    const char *p = s;
    size_t k = 0;
    int nd = 0;
    long frac = 0, ex = 0;
    if (p < e && (*p == '+' || *p == '-'))
        if (*p++ == '-') n->digits[k++] = '-';
    for (; p < e && is_digit(*p); p++, nd++)
        if (nd < NUM_MAX_DIGITS) n->digits[k++] = *p;
    if (p < e && *p == '.')
        for (p++; p < e && is_digit(*p); p++, nd++, frac++)
            if (nd < NUM_MAX_DIGITS) n->digits[k++] = *p;
    if (nd == 0) return 1;
    if (nd > NUM_MAX_DIGITS) return 2;
    n->digits[k] = '\0';
    if (p < e && (*p == 'e' || *p == 'E')) {
        const char *q = p + 1;
        bool neg = false;
        if (q < e && (*q == '+' || *q == '-')) neg = *q++ == '-';
        if (q < e && is_digit(*q)) {
            for (; q < e && is_digit(*q); q++)
                if (ex < EXP_CLAMP) ex = ex * 10 + (*q - '0');
            ex = neg ? -ex : ex;
            p = q;
        }
    }
    n->exp10 = ex - frac;
    n->end = p;
    return 0;
}

/* The number times 10^shift, rounded once; false when not a finite,
 * representable double (1e999, 1e-999). */
static bool number_value(const number *n, int shift, double *out) {
    char buf[NUM_MAX_DIGITS + 32];
    snprintf(buf, sizeof buf, "%se%ld", n->digits, n->exp10 + shift);
    errno = 0;
    double v = strtod(buf, NULL);
    if (errno == ERANGE || !isfinite(v)) return false;
    *out = v;
    return true;
}

/* ---- parsing ---------------------------------------------------------- */

static bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static int parse_ratio(const number *a, const char *p, const char *e,
                       double *out, char *why, size_t len) {
    number b;
    double x, y;
    while (p < e && is_space(*p)) p++;
    if (p == e || *p != ':')
        return fail(why, len, "expected a ratio such as 2:1 or 1.5");
    for (p++; p < e && is_space(*p); p++) {
    }
    if (scan_number(p, e, &b) || b.end != e)
        return fail(why, len, "expected a ratio such as 2:1 or 1.5");
    if (!number_value(a, 0, &x) || !number_value(&b, 0, &y))
        return fail(why, len, "number out of range in a ratio");
    if (!(x > 0 && y > 0))
        return fail(why, len,
                    "both sides of a ratio must be positive, "
                    "such as 2:1");
    *out = x / y;
    return 0;
}

/* Says why `unit` (u: its entry, or NULL when unknown) is not one of
 * `kind`.  num is the number as written, for "did you mean". */
static int explain(pp_qkind kind, const char *unit, int ulen, const unit_def *u,
                   const char *num, int nlen, char *why, size_t len) {
    const char *nm = kinds[kind].name, *ex = kinds[kind].examples;
    if (!u) {
        bool zero = nlen > 0 && num[nlen - 1] == '0' &&
                    (nlen == 1 || (nlen == 2 && !is_digit(num[0])));
        if (zero && (unit[0] == 'x' || unit[0] == 'X'))
            return fail(why, len,
                        "expected %s such as %s; hexadecimal "
                        "numbers are not accepted",
                        nm, ex);
        return fail(why, len, "expected %s such as %s; unknown unit \"%.*s\"",
                    nm, ex, ulen > 32 ? 32 : ulen, unit);
    }
    if (u->kind == Q_AMBIG)
        return fail(why, len, "expected %s such as %s; %s", nm, ex, u->why);
    if (kind == PP_Q_COUNT)
        return fail(why, len,
                    "expected %s such as %s (\"%s\" is not a "
                    "count suffix)",
                    nm, ex, u->sym);
    if (kind == PP_Q_BYTES && u->kind == Q_BITS)
        return fail(why, len, "expected %s such as %s; \"%s\" is bits", nm, ex,
                    u->sym);
    if (kind == PP_Q_BANDWIDTH && u->kind == Q_BITS) {
        bool bit = ulen >= 3 && strcmp(u->sym + ulen - 3, "bit") == 0;
        return fail(why, len,
                    "expected %s such as %s, got a bit count; did "
                    "you mean %.*s%s%s?",
                    nm, ex, nlen > 32 ? 32 : nlen, num, u->sym,
                    bit ? "/s" : "ps");
    }
    if (kind == PP_Q_FLOPRATE && u->kind == PP_Q_FLOPS && ulen >= 5 &&
        strcmp(u->sym + ulen - 5, "FLOPs") == 0)
        return fail(why, len,
                    "expected %s such as %s; \"%s\" reads as a "
                    "count: write %.*sFLOPS or %.*sFLOP/s for a rate",
                    nm, ex, u->sym, ulen - 5, u->sym, ulen - 5, u->sym);
    return fail(why, len, "expected %s such as %s, got %s", nm, ex,
                kinds[u->kind].name);
}

int pp_unit_parse(const char *text, pp_qkind kind, const char *default_unit,
                  double *out, char *why, size_t why_len) {
    if (why && why_len) why[0] = '\0';
    if (!text || !out || (unsigned)kind >= PP_Q__COUNT) {
        fail(why, why_len, "invalid argument to pp_unit_parse");
        return PP_EINVAL;
    }
    const char *nm = kinds[kind].name, *ex = kinds[kind].examples;
    const char *s = text, *e = text + strlen(text);
    while (s < e && is_space(*s)) s++;
    while (e > s && is_space(e[-1])) e--;
    if (s == e)
        return fail(why, why_len, "empty; expected %s such as %s", nm, ex);

    number n;
    int rc = scan_number(s, e, &n);
    if (rc == 2)
        return fail(why, why_len,
                    "expected %s such as %s; the number has "
                    "more than %d digits",
                    nm, ex, NUM_MAX_DIGITS);
    if (rc)
        return fail(why, why_len, "expected %s such as %s, not a number", nm,
                    ex);
    const char *unit = n.end;
    while (unit < e && is_space(*unit)) unit++;
    size_t ulen = (size_t)(e - unit);

    double v = 0;
    if (kind == PP_Q_RATIO) {
        if (ulen == 0) {
            if (!number_value(&n, 0, &v))
                return fail(why, why_len, "number out of range");
        } else if ((rc = parse_ratio(&n, n.end, e, &v, why, why_len))) {
            return rc;
        }
        *out = v;
        return 0;
    }

    const unit_def *u = NULL;
    if (ulen == 0 && default_unit) {
        /* A field's documented default: "200" reads as "200<default>". */
        u = find_unit(default_unit, strlen(default_unit));
        if (!u || u->kind != (int)kind)
            return fail(why, why_len, "default unit \"%s\" is not a unit of %s",
                        default_unit, nm);
    } else if (ulen == 0) {
        if (kind != PP_Q_COUNT)
            return fail(why, why_len, "%s needs a unit, such as %s", nm, ex);
    } else if (kind == PP_Q_COUNT && ulen == 1 && unit[0] == 'B') {
        /* "175B parameters", "300B tokens": billions, as model cards
         * write them.  Only where a count is meant: in a byte field "B"
         * stays bytes, and this branch is never reached there. */
        static const unit_def billion = U("B", PP_Q_COUNT, 9, 1);
        u = &billion;
    } else {
        u = find_unit(unit, ulen);
        if (!u || u->kind != (int)kind)
            return explain(kind, unit, (int)ulen, u, s, (int)(n.end - s), why,
                           why_len);
    }
    if (!number_value(&n, u ? u->exp10 : 0, &v) ||
        !isfinite(v * (u ? u->mul : 1)))
        return fail(why, why_len, "expected %s such as %s; number out of range",
                    nm, ex);
    *out = v * (u ? u->mul : 1);
    return 0;
}

/* ---- formatting ------------------------------------------------------- */

/* The symbols a person would write, largest first; the first whose
 * rounded mantissa is at least 1 wins. */
static const char *const fmt_units[PP_Q__COUNT][9] = {
    [PP_Q_BYTES] = {"PB", "TB", "GB", "MB", "kB", "B"},
    [PP_Q_BANDWIDTH] = {"Pbps", "Tbps", "Gbps", "Mbps", "kbps", "bps"},
    [PP_Q_FLOPS] = {"ZFLOP", "EFLOP", "PFLOP", "TFLOP", "GFLOP", "MFLOP",
                    "kFLOP", "FLOP"},
    [PP_Q_FLOPRATE] = {"EFLOPS", "PFLOPS", "TFLOPS", "GFLOPS", "MFLOPS",
                       "kFLOPS", "FLOPS"},
    [PP_Q_TIME] = {"d", "h", "min", "s", "ms", "us", "ns"},
};
static const char *const fmt_binary[] = {"PiB", "TiB", "GiB", "MiB",
                                         "KiB", "B",   NULL};
static const char *const fmt_zero[PP_Q__COUNT] = {
    [PP_Q_BYTES] = "B",        [PP_Q_BANDWIDTH] = "bps", [PP_Q_FLOPS] = "FLOP",
    [PP_Q_FLOPRATE] = "FLOPS", [PP_Q_TIME] = "s",
};

/* Prints m / 10^shift with `digits` significant digits, %g style.  The
 * decimal point is moved in the text rather than by dividing by an inexact
 * 1e18, so at 17 digits "1.1EFLOPS" parses back to exactly 1.1e18.  Returns
 * the decimal exponent of the rounded result. */
static int print_shifted(char *out, size_t len, double m, int shift,
                         int digits) {
    static const char zeros[] = "0000000000000000000000";
    char e[48], ds[24];
    int nd = 0;
    snprintf(e, sizeof e, "%.*e", digits - 1, m); /* "-1.2345e+18" */
    const char *p = e, *sign = *p == '-' ? "-" : "";
    for (p += *sign != '\0'; *p != 'e'; p++)
        if (*p != '.') ds[nd++] = *p;
    int x = atoi(p + 1) - shift;
    while (nd > 1 && ds[nd - 1] == '0') nd--; /* no trailing zeros */
    if (x < -4 || x >= digits) /* where %g would use an exponent */
        snprintf(out, len, "%s%c%s%.*se%+03d", sign, ds[0], nd > 1 ? "." : "",
                 nd - 1, ds + 1, x);
    else if (x < 0)
        snprintf(out, len, "%s0.%.*s%.*s", sign, -x - 1, zeros, nd, ds);
    else if (nd <= x + 1)
        snprintf(out, len, "%s%.*s%.*s", sign, nd, ds, x + 1 - nd, zeros);
    else
        snprintf(out, len, "%s%.*s.%.*s", sign, x + 1, ds, nd - x - 1,
                 ds + x + 1);
    return x;
}

/* Bytes in binary units only when that is how the number was made: a
 * whole number of the binary unit it would be printed in, and not a whole
 * number of the decimal one (80GiB; but 2.048MB, and 2.684GB rather than
 * 2.5GiB-and-change for a sum of model states). */
static bool looks_binary(double v) {
    int k = 0;
    double p = 1;
    v = fabs(v);
    if (v < 1024 || v != floor(v)) return false;
    while (k < 5 && v >= p * 1024) k++, p *= 1024;
    return fmod(v, p) == 0 && fmod(v, pow10i(3 * k)) != 0;
}

char *pp_unit_format(double value, pp_qkind kind, int digits, char *buf,
                     size_t len) {
    char num[64];
    if (!buf || len == 0) return buf;
    digits = digits < 1 ? 1 : digits > 17 ? 17 : digits;
    if (!isfinite(value) || (unsigned)kind >= PP_Q__COUNT ||
        kind == PP_Q_COUNT || (kind == PP_Q_RATIO && value <= 0)) {
        snprintf(buf, len, "%.*g", digits, value);
        return buf;
    }
    if (kind == PP_Q_RATIO) {
        snprintf(buf, len, "%.*g:1", digits, value);
        return buf;
    }
    if (value == 0) {
        snprintf(buf, len, "0%s", fmt_zero[kind]);
        return buf;
    }
    const char *const *list = kind == PP_Q_BYTES && looks_binary(value)
                                  ? fmt_binary
                                  : fmt_units[kind];
    const unit_def *u = NULL;
    for (size_t i = 0; list[i]; i++) {
        u = find_unit(list[i], strlen(list[i]));
        /* The first unit whose rounded mantissa is at least 1: 999999B
         * at 3 digits is "1MB", not "1e+03kB". */
        if (print_shifted(num, sizeof num, value / u->mul, u->exp10, digits) >=
            0)
            break;
    }
    snprintf(buf, len, "%s%s", num, u->sym);
    return buf;
}
