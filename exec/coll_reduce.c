/*
 * coll_reduce.c: dst = op(dst, src) and dst = op(a, b) on the CPU for fp32,
 * bf16 and fp16.
 *
 * Written for the vectoriser (this file is built with -O3): one loop per
 * (type, op) with restrict pointers and no calls or branches in the body;
 * the 16-bit types go through float and come back rounded to nearest even
 * with branch-free bit arithmetic (F. Giesen's half conversions), so gcc
 * turns the loop into SIMD integer and float operations.  Sums of the same
 * two operands give the same bits on every rank (IEEE addition commutes),
 * which keeps the ranks' results identical under recursive doubling.
 */
#include "exec_int.h"

#include <string.h>

static inline uint32_t f2u(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static inline float u2f(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

float pp__bf16_to_f32(uint16_t h) {
    return u2f((uint32_t)h << 16);
}

static inline uint16_t bf16_rne(float f) {
    uint32_t u = f2u(f);
    uint32_t r = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
    /* NaN stays a (quiet) NaN instead of rounding into infinity */
    uint32_t nan = (u >> 16) | 0x40u;
    return (uint16_t)((u & 0x7FFFFFFFu) > 0x7F800000u ? nan : r);
}

uint16_t pp__f32_to_bf16(float f) {
    return bf16_rne(f);
}

static inline float fp16_to_f32(uint16_t h) {
    uint32_t o = ((uint32_t)h & 0x7FFFu) << 13;
    uint32_t exp = o & (0x7C00u << 13);
    uint32_t norm = o + ((127u - 15u) << 23);
    uint32_t infnan = norm + ((128u - 16u) << 23);
    /* subnormal: let the FPU normalise it */
    float sub = u2f(o + ((127u - 15u + 1u) << 23)) - u2f(113u << 23);
    uint32_t v = exp == (0x7C00u << 13) ? infnan : exp == 0 ? f2u(sub) : norm;
    return u2f(v | (((uint32_t)h & 0x8000u) << 16));
}

static inline uint16_t f32_to_fp16(float f) {
    uint32_t u = f2u(f);
    uint32_t sign = u & 0x80000000u;
    u ^= sign;
    uint32_t big = u > (255u << 23) ? 0x7E00u : 0x7C00u; /* NaN, Inf */
    /* subnormal results: adding the magic number aligns and rounds */
    const uint32_t magic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
    uint32_t sub = f2u(u2f(u) + u2f(magic)) - magic;
    uint32_t norm =
        (u + ((uint32_t)(15 - 127) << 23) + 0xFFFu + ((u >> 13) & 1u)) >> 13;
    uint32_t o = u >= ((127u + 16u) << 23) ? big
                 : u < (113u << 23)        ? sub
                                           : norm;
    return (uint16_t)(o | (sign >> 16));
}

float pp__fp16_to_f32(uint16_t h) {
    return fp16_to_f32(h);
}
uint16_t pp__f32_to_fp16(float f) {
    return f32_to_fp16(f);
}

#define OP_SUM(a, b) ((a) + (b))
#define OP_MAX(a, b) ((a) > (b) ? (a) : (b))
#define OP_MIN(a, b) ((a) < (b) ? (a) : (b))

#define DEF_F32(name, OP)                                                      \
    static void name(float *restrict d, const float *restrict s, size_t n) {   \
        for (size_t i = 0; i < n; i++) d[i] = OP(d[i], s[i]);                  \
    }
#define DEF_H(name, OP, TOF, FROMF)                                            \
    static void name(uint16_t *restrict d, const uint16_t *restrict s,         \
                     size_t n) {                                               \
        for (size_t i = 0; i < n; i++) {                                       \
            float a = TOF(d[i]), b = TOF(s[i]);                                \
            d[i] = FROMF(OP(a, b));                                            \
        }                                                                      \
    }

/* The same with a separate output: dst = op(a, b), for the ring's out of
 * place reductions (no copy of the input into the output first). */
#define DEF3_F32(name, OP)                                                     \
    static void name(float *restrict d, const float *restrict a,               \
                     const float *restrict b, size_t n) {                      \
        for (size_t i = 0; i < n; i++) d[i] = OP(a[i], b[i]);                  \
    }
#define DEF3_H(name, OP, TOF, FROMF)                                           \
    static void name(uint16_t *restrict d, const uint16_t *restrict a,         \
                     const uint16_t *restrict b, size_t n) {                   \
        for (size_t i = 0; i < n; i++) d[i] = FROMF(OP(TOF(a[i]), TOF(b[i]))); \
    }

DEF_F32(sum_f32, OP_SUM)
DEF_F32(max_f32, OP_MAX)
DEF_F32(min_f32, OP_MIN)
DEF_H(sum_bf16, OP_SUM, pp__bf16_to_f32, bf16_rne)
DEF_H(max_bf16, OP_MAX, pp__bf16_to_f32, bf16_rne)
DEF_H(min_bf16, OP_MIN, pp__bf16_to_f32, bf16_rne)
DEF_H(sum_fp16, OP_SUM, fp16_to_f32, f32_to_fp16)
DEF_H(max_fp16, OP_MAX, fp16_to_f32, f32_to_fp16)
DEF_H(min_fp16, OP_MIN, fp16_to_f32, f32_to_fp16)

DEF3_F32(sum3_f32, OP_SUM)
DEF3_F32(max3_f32, OP_MAX)
DEF3_F32(min3_f32, OP_MIN)
DEF3_H(sum3_bf16, OP_SUM, pp__bf16_to_f32, bf16_rne)
DEF3_H(max3_bf16, OP_MAX, pp__bf16_to_f32, bf16_rne)
DEF3_H(min3_bf16, OP_MIN, pp__bf16_to_f32, bf16_rne)
DEF3_H(sum3_fp16, OP_SUM, fp16_to_f32, f32_to_fp16)
DEF3_H(max3_fp16, OP_MAX, fp16_to_f32, f32_to_fp16)
DEF3_H(min3_fp16, OP_MIN, fp16_to_f32, f32_to_fp16)

void pp__reduce_cpu3(pp_xdtype t, pp_xredop op, void *dst, const void *a,
                     const void *b, size_t count) {
    switch (t * 3 + op) {
    case PP_XDT_FP32 * 3 + PP_XOP_SUM: sum3_f32(dst, a, b, count); break;
    case PP_XDT_FP32 * 3 + PP_XOP_MAX: max3_f32(dst, a, b, count); break;
    case PP_XDT_FP32 * 3 + PP_XOP_MIN: min3_f32(dst, a, b, count); break;
    case PP_XDT_BF16 * 3 + PP_XOP_SUM: sum3_bf16(dst, a, b, count); break;
    case PP_XDT_BF16 * 3 + PP_XOP_MAX: max3_bf16(dst, a, b, count); break;
    case PP_XDT_BF16 * 3 + PP_XOP_MIN: min3_bf16(dst, a, b, count); break;
    case PP_XDT_FP16 * 3 + PP_XOP_SUM: sum3_fp16(dst, a, b, count); break;
    case PP_XDT_FP16 * 3 + PP_XOP_MAX: max3_fp16(dst, a, b, count); break;
    case PP_XDT_FP16 * 3 + PP_XOP_MIN: min3_fp16(dst, a, b, count); break;
    default: break;
    }
}

void pp__reduce_cpu(pp_xdtype t, pp_xredop op, void *dst, const void *src,
                    size_t count) {
    switch (t * 3 + op) {
    case PP_XDT_FP32 * 3 + PP_XOP_SUM: sum_f32(dst, src, count); break;
    case PP_XDT_FP32 * 3 + PP_XOP_MAX: max_f32(dst, src, count); break;
    case PP_XDT_FP32 * 3 + PP_XOP_MIN: min_f32(dst, src, count); break;
    case PP_XDT_BF16 * 3 + PP_XOP_SUM: sum_bf16(dst, src, count); break;
    case PP_XDT_BF16 * 3 + PP_XOP_MAX: max_bf16(dst, src, count); break;
    case PP_XDT_BF16 * 3 + PP_XOP_MIN: min_bf16(dst, src, count); break;
    case PP_XDT_FP16 * 3 + PP_XOP_SUM: sum_fp16(dst, src, count); break;
    case PP_XDT_FP16 * 3 + PP_XOP_MAX: max_fp16(dst, src, count); break;
    case PP_XDT_FP16 * 3 + PP_XOP_MIN: min_fp16(dst, src, count); break;
    default: break;
    }
}
