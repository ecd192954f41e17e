/*
 * wc_sym_wire.h - the messages between the symbolizer and its helper
 * process: one request, one reply, over a stream socket, in the host's
 * byte order (both ends are one build on one machine).
 *
 * Owns: the encoding of every request and reply (wc_sym_fetch's inputs
 * and results), and the growable buffer and bounds-checked reader they
 * are built with.  Decoding trusts nothing: a short or malformed message
 * fails the reader, never reads past its buffer, and a symbol table is
 * checked before it is kept (wc_symtab_adopt).
 *
 * A request is {u32 length, u32 op} and the op's fields; a reply is
 * {u32 length, i32 rc, u32 refused, u32 over_bounds, u32 too_big,
 * u32 bad_lines} and the op's result, length counting what follows the
 * header.
 */
#ifndef WC_SYM_WIRE_H
#define WC_SYM_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sym/wc_sym_fetch.h"

enum wc_wire_op {
	WC_OP_MAPS = 1, /* pid, known sig -> maps */
	WC_OP_IMAGE,	/* pid, map, file -> image */
	WC_OP_SYMBOLS,	/* pid, map, file, budget -> table */
	WC_OP_VDSO,	/* pid, start, end, budget -> hash, image, table */
	WC_OP_PERFMAP,	/* pid, nspid, euid, known id, budget -> id, table */
	WC_OP_CFI,	/* pid, map, limits -> unwind table */
};

/* The helper is started with it, and exits with WC_WIRE_EXIT_VERSION if
 * it speaks another (a plugin upgraded without its helper). */
#define WC_WIRE_VERSION 4
#define WC_WIRE_EXIT_VERSION 3

#define WC_WIRE_REQ_HEAD 8
#define WC_WIRE_REPLY_HEAD 24
/* A request never needs more (a path is at most PATH_MAX). */
#define WC_WIRE_REQ_MAX (64u << 10)

struct wc_wbuf {
	char *p;
	size_t len, cap;
	size_t head; /* header bytes, before what the length counts */
	bool failed; /* out of memory: the message is lost */
};

/* Empty, but for head zero bytes the header will be written into. */
void wc_wbuf_reset(struct wc_wbuf *b, size_t head);
void wc_wbuf_free(struct wc_wbuf *b);
void wc_wbuf_u32(struct wc_wbuf *b, uint32_t v);
void wc_wbuf_u64(struct wc_wbuf *b, uint64_t v);
void wc_wbuf_bytes(struct wc_wbuf *b, const void *p, size_t n);
/* Pad to a multiple of 8 after the header, so that arrays of 64-bit
 * fields can be read in place on the other side. */
void wc_wbuf_align8(struct wc_wbuf *b);
/* Write the length field (the first 4 bytes) from what follows the
 * header. */
void wc_wbuf_seal(struct wc_wbuf *b);

struct wc_rbuf {
	const char *p;
	size_t len, at;
	bool failed; /* read past the end, or a field out of range */
};

void wc_rbuf_init(struct wc_rbuf *r, const void *p, size_t len);
uint32_t wc_rbuf_u32(struct wc_rbuf *r);
uint64_t wc_rbuf_u64(struct wc_rbuf *r);
/* n bytes in place, or NULL (and failed) if fewer are left. */
const void *wc_rbuf_bytes(struct wc_rbuf *r, size_t n);
void wc_rbuf_align8(struct wc_rbuf *r);

/* The parts messages are made of.  A map's path is sent with it and, once
 * decoded, points into the reader's buffer. */
void wc_wire_put_map(struct wc_wbuf *b, const struct wc_proc_map *m);
bool wc_wire_get_map(struct wc_rbuf *r, struct wc_proc_map *m);
void wc_wire_put_file(struct wc_wbuf *b, const struct wc_fetch_file *f);
void wc_wire_get_file(struct wc_rbuf *r, struct wc_fetch_file *f);
void wc_wire_put_maps(struct wc_wbuf *b, const struct wc_fetch_maps *m);
/* Into *out, whose arrays then belong to the caller. */
bool wc_wire_get_maps(struct wc_rbuf *r, struct wc_fetch_maps *out);
void wc_wire_put_image(struct wc_wbuf *b, const struct wc_fetch_image *img);
bool wc_wire_get_image(struct wc_rbuf *r, struct wc_fetch_image *img);
void wc_wire_put_symtab(struct wc_wbuf *b, const struct wc_symtab *t);
/* Into t, initialised with its budget by the caller. */
bool wc_wire_get_symtab(struct wc_rbuf *r, struct wc_symtab *t);
/* Limits are clamped to what wc_sym_cfi.h allows anyone. */
void wc_wire_put_cfi_limits(struct wc_wbuf *b, const struct wc_cfi_limits *l);
bool wc_wire_get_cfi_limits(struct wc_rbuf *r, struct wc_cfi_limits *l);
void wc_wire_put_cfi(struct wc_wbuf *b, const struct wc_cfi_table *t);
/* Into t (its rows then the caller's): 1 to rows_max valid rows. */
bool wc_wire_get_cfi(struct wc_rbuf *r, size_t rows_max,
		     struct wc_cfi_table *t);
void wc_wire_put_file_id(struct wc_wbuf *b, const struct wc_file_id *id);
bool wc_wire_get_file_id(struct wc_rbuf *r, struct wc_file_id *id);

#endif /* WC_SYM_WIRE_H */
