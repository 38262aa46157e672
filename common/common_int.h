/*
 * common_int.h: private to common/.
 */
#ifndef PODPLAN_COMMON_INT_H
#define PODPLAN_COMMON_INT_H

#include "podplan/common.h"

/* Describes a node for "got ..." in messages: a scalar's text (quoted and
 * cut to a sane length), "a list" or "a mapping". */
const char *pp__node_desc(const pp_node *n, char *buf, size_t len);

#endif
