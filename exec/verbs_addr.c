/*
 * exec/verbs_addr.c: the verbs address blob and the RoCE GID choice.
 *
 * The blob (little-endian, PP_VB_HDR_BYTES of header then the QP table):
 *
 *   off len  field
 *     0   4  magic "PPVB"          4   1  version
 *     5   1  link layer            6   1  port
 *     7   1  active MTU (ibv_mtu)  8   2  LID (IB; 0 on RoCE)
 *    10   2  channels             12   4  rank
 *    16   4  nranks               20   4  PSN (24 bits)
 *    24   4  port max_msg_sz      28  16  GID
 *    44   1  flags (bit 0: GID valid, use a GRH)
 *    45   3  reserved             48   8  credit slots' address
 *    56   4  credit slots' rkey   60   4  reserved
 *    64   3 * nranks * channels   QP numbers, [peer][channel], 24 bits
 *
 * Why the QP table: an RC QP is connected to exactly one remote QP, so a
 * peer needs the number of the QP this rank made *for it*.  Making every
 * QP in create() lets one all-gather of blobs carry them all; the cost
 * is 3 bytes per (peer, channel), which fits PP_XPORT_ADDR_MAX (256) up
 * to nranks * channels = 64 and beyond that needs the bootstrap to size
 * its buffers with pp_xport_addr_max() (exec/xport.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "verbs_int.h"

const char *pp__vb_sysfs_root = "/sys/class/infiniband";

static void put16(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

static void put32(unsigned char *p, uint32_t v) {
    put16(p, v);
    put16(p + 2, v >> 16);
}

static void put64(unsigned char *p, uint64_t v) {
    put32(p, (uint32_t)v);
    put32(p + 4, (uint32_t)(v >> 32));
}

static uint32_t get16(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}

static uint32_t get32(const unsigned char *p) {
    return get16(p) | get16(p + 2) << 16;
}

static uint64_t get64(const unsigned char *p) {
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

size_t pp__vb_addr_size(int nranks, int channels) {
    return PP_VB_HDR_BYTES + 3u * (size_t)nranks * (size_t)channels;
}

void pp__vb_addr_encode(const pp_xport *t, char *buf, size_t *len) {
    unsigned char *p = (unsigned char *)buf;
    int C = t->o.channels;
    size_t n = pp__vb_addr_size(t->o.nranks, C);

    memset(p, 0, n);
    put32(p, PP_VB_MAGIC);
    p[4] = PP_VB_VERSION;
    p[5] = t->port.link_layer;
    p[6] = (unsigned char)t->o.ib_port;
    p[7] = (unsigned char)t->port.active_mtu;
    put16(p + 8, t->port.lid);
    put16(p + 10, (uint32_t)C);
    put32(p + 12, (uint32_t)t->o.rank);
    put32(p + 16, (uint32_t)t->o.nranks);
    put32(p + 20, t->psn);
    put32(p + 24, t->port.max_msg_sz);
    memcpy(p + 28, t->gid.raw, 16);
    p[44] = t->gid_index >= 0 ? PP_VB_FLAG_GID : 0;
    put64(p + 48, (uint64_t)(uintptr_t)t->ctl);
    put32(p + 56, t->ctl_mr->rkey);
    for (int i = 0; i < t->o.nranks * C; i++) {
        uint32_t qpn = t->qps[i].qp ? t->qps[i].qp->qp_num : 0;
        unsigned char *q = p + PP_VB_HDR_BYTES + 3 * (size_t)i;
        put16(q, qpn);
        q[2] = (unsigned char)(qpn >> 16);
    }
    *len = n;
}

int pp__vb_addr_decode(const pp_xport *t, int peer, const char *buf, size_t len,
                       pp__vb_addr *a, pp_error *e) {
    const unsigned char *p = (const unsigned char *)buf;
    int rc = PP_EPEER;

    if (!buf || len < PP_VB_HDR_BYTES || get32(p) != PP_VB_MAGIC) {
        pp_error_set(e, rc,
                     "rank %d: rank %d's address is not a verbs "
                     "address (%zu bytes): do both run --transport verbs?",
                     t->o.rank, peer, buf ? len : 0);
        goto out;
    }
    if (p[4] != PP_VB_VERSION) {
        pp_error_set(e, rc,
                     "rank %d: rank %d's verbs address is version "
                     "%u, this podplan speaks %d",
                     t->o.rank, peer, p[4], PP_VB_VERSION);
        goto out;
    }
    memset(a, 0, sizeof *a);
    a->link_layer = p[5];
    a->port = p[6];
    a->mtu = p[7];
    a->lid = (uint16_t)get16(p + 8);
    a->channels = (uint16_t)get16(p + 10);
    a->rank = get32(p + 12);
    a->nranks = get32(p + 16);
    a->psn = get32(p + 20) & 0xffffffu;
    a->max_msg = get32(p + 24);
    memcpy(a->gid.raw, p + 28, 16);
    a->flags = p[44];
    a->ctl_addr = get64(p + 48);
    a->ctl_rkey = get32(p + 56);
    a->qpns = p + PP_VB_HDR_BYTES;
    if (a->rank != (uint32_t)peer || a->nranks != (uint32_t)t->o.nranks ||
        a->channels != (uint16_t)t->o.channels) {
        pp_error_set(e, rc,
                     "rank %d: the address given for rank %d says "
                     "rank %u of %u with %u channels, expected rank %d of %d "
                     "with %d",
                     t->o.rank, peer, a->rank, a->nranks, a->channels, peer,
                     t->o.nranks, t->o.channels);
        goto out;
    }
    if (len < pp__vb_addr_size(t->o.nranks, t->o.channels)) {
        pp_error_set(e, rc,
                     "rank %d: rank %d's verbs address is %zu bytes, "
                     "%zu expected (cut by the bootstrap?)",
                     t->o.rank, peer, len,
                     pp__vb_addr_size(t->o.nranks, t->o.channels));
        goto out;
    }
    if (a->link_layer != t->port.link_layer) {
        pp_error_set(
            e, rc,
            "rank %d: rank %d's port is %s, this rank's is "
            "%s: InfiniBand and RoCE ports cannot talk",
            t->o.rank, peer,
            a->link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet (RoCE)"
                                                     : "InfiniBand",
            t->port.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet (RoCE)"
                                                          : "InfiniBand");
        goto out;
    }
    rc = 0;
out:
    return rc;
}

uint32_t pp__vb_addr_qpn(const pp__vb_addr *a, int peer, int ch) {
    const unsigned char *q =
        a->qpns + 3 * ((size_t)peer * a->channels + (size_t)ch);
    return get16(q) | (uint32_t)q[2] << 16;
}

/* Reads one line of a sysfs file into buf, without the newline; -1 if
 * the file cannot be read (a GID slot past the table's end, say). */
static int read_line(const char *path, char *buf, size_t len) {
    FILE *f = fopen(path, "r");
    int rc = -1;

    if (!f) goto out;
    if (!fgets(buf, (int)len, f)) goto close;
    buf[strcspn(buf, "\n")] = '\0';
    rc = 0;
close:
    fclose(f);
out:
    return rc;
}

/* "0000:0000:0000:0000:0000:ffff:c0a8:0101" is an IPv4-mapped address:
 * eighty zero bits, sixteen one bits, then the IPv4 address. */
static bool gid_is_ipv4(const char *text) {
    unsigned v[8];

    if (sscanf(text, "%x:%x:%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3],
               &v[4], &v[5], &v[6], &v[7]) != 8)
        return false;
    return !v[0] && !v[1] && !v[2] && !v[3] && !v[4] && v[5] == 0xffff &&
           (v[6] || v[7]);
}

/* NCCL (ncclIbGetGidIndex) and perftest read the same two files: the
 * kernel publishes each GID's type ("IB/RoCE v1", "RoCE v2") only there
 * on rdma-core before ibv_query_gid_ex (v32).  An IPv4-mapped RoCE v2
 * GID is routable (UDP/IP) and is the one the switches' ECN/PFC setup
 * expects; a link-local IPv6 one (fe80::) is not routable. */
int pp__vb_choose_gid(const char *dev, int port, int tbl_len, int *out,
                      pp_error *e) {
    char path[512], type[64], gid[64];
    int first_v2 = -1, pick = -1, rc = 0;

    for (int i = 0; i < tbl_len && pick < 0; i++) {
        snprintf(path, sizeof path, "%s/%s/ports/%d/gid_attrs/types/%d",
                 pp__vb_sysfs_root, dev, port, i);
        if (read_line(path, type, sizeof type) || strcmp(type, "RoCE v2"))
            continue;
        snprintf(path, sizeof path, "%s/%s/ports/%d/gids/%d", pp__vb_sysfs_root,
                 dev, port, i);
        if (read_line(path, gid, sizeof gid)) continue;
        if (gid_is_ipv4(gid))
            pick = i;
        else if (first_v2 < 0 &&
                 strcmp(gid, "0000:0000:0000:0000:0000:0000:0000:0000"))
            first_v2 = i;
    }
    if (pick < 0) pick = first_v2;
    if (pick < 0) {
        rc = pp_error_set(e, PP_ENODEV,
                          "%s port %d is RoCE but has no "
                          "RoCE v2 GID under %s/%s/ports/%d/gid_attrs/types "
                          "(no IP address on its netdev?); give gid_index",
                          dev, port, pp__vb_sysfs_root, dev, port);
        goto out;
    }
    *out = pick;
out:
    return rc;
}
