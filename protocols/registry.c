/*
 * registry.c - the table of protocol processors and selection by sniffing.
 */
#include "config.h"

#include <string.h>

#include "btrace/proto.h"

const struct bt_proto_ops *const bt_protocols[BT_PROTO_MAX] = {
	[BT_PROTO_LINE]    = &bt_proto_line,
	[BT_PROTO_ONESHOT] = &bt_proto_oneshot,
};

const struct bt_proto_ops *bt_proto_by_name(const char *name)
{
	for (unsigned i = 0; i < BT_PROTO_MAX; i++)
		if (bt_protocols[i] && strcmp(bt_protocols[i]->name, name) == 0)
			return bt_protocols[i];
	return NULL;
}

/*
 * Sniffing order matters: specific protocols first; line-oriented and
 * one-shot never claim a channel by sniffing (they have no signature).
 */
const struct bt_proto_ops *bt_proto_sniff(int dir, int role, const uint8_t *p,
					  size_t n, int *maybe)
{
	*maybe = 0;
	for (unsigned i = 0; i < BT_PROTO_MAX; i++) {
		const struct bt_proto_ops *o = bt_protocols[i];
		if (!o || !o->sniff)
			continue;
		int r = o->sniff(dir, role, p, n);
		if (r == BT_SNIFF_YES)
			return o;
		if (r == BT_SNIFF_MAYBE)
			*maybe = 1;
	}
	return NULL;
}
