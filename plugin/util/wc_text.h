/*
 * wc_text.h - untrusted text (function names from anyone's files, process
 * names, titles) made safe for every file we write: valid UTF-8, strict
 * (no overlongs, surrogates, U+FFFE/U+FFFF or past U+10FFFF: every
 * sequence let through is a character XML 1.0 allows), no control bytes,
 * no spaces at either end, cut between characters.
 *
 * Owns nothing: pure functions.
 */
#ifndef WC_TEXT_H
#define WC_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/* Length of the valid UTF-8 sequence at p (n > 0 bytes left), 0 if
 * invalid. */
size_t wc_utf8_seq(const unsigned char *p, size_t n);

/* The safe text of in[0..n) into out (room for cap - 1 bytes and a NUL):
 * control bytes and invalid UTF-8 as '?'.  Returns its length; *cut if
 * shortened. */
size_t wc_text_clean(const char *in, size_t n, char *out, size_t cap,
		     bool *cut);

#endif /* WC_TEXT_H */
