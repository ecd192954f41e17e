/* wc_sym_cfi.c - see wc_sym_cfi.h. */
#include <dwarf.h>
#include <elf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "sym/wc_sym_cfi.h"
#include "util/wc_clock.h"

/* x86-64's DWARF register numbers. */
#define REG_FP 6
#define REG_SP 7
#define REG_RA 16

/* A real binary has a handful of CIEs; a file with more is refused
 * entries past these rather than searched. */
#define CIES_MAX 4096
/* An FDE's instructions: real ones are tens of bytes.  libdw runs them
 * from the start for every row, so a long one costs its length a row. */
#define FDE_BYTES_MAX 4096
/* The CPU clock is a system call in the helper (seccomp): not every row. */
#define DEADLINE_EVERY 32

struct cie {
	uint64_t off;
	uint8_t enc; /* the FDE pointer encoding, 0xff: unusable */
};

struct fde {
	uint64_t start, end; /* link-time addresses */
	uint8_t src;	     /* SRC_EH or SRC_DEBUG */
};

enum { SRC_EH, SRC_DEBUG, SRC_NR };

struct build {
	const struct wc_cfi_limits *lim;
	const struct wc_elf_info *info;
	struct wc_cfi_table *t;
	struct cie *cies;
	size_t ncies;
	struct fde *fdes;
	size_t nfdes, fdes_cap;
	uint64_t cpu_end;
	unsigned since_check;
	Dwarf_CFI *cfi[SRC_NR];
	Dwarf *dw; /* of the image holding the debug file's section */
	Elf *img_elf;
	char *img;	/* that image */
	char *inflated; /* the section, if it was compressed */
};

static bool over_time(struct build *b, bool now)
{
	if (!now && ++b->since_check < DEADLINE_EVERY)
		return false;
	b->since_check = 0;
	return wc_clock_ns(CLOCK_THREAD_CPUTIME_ID) > b->cpu_end;
}

/* --- the section and its entries --- */

static Elf_Scn *section(Elf *elf, const char *want, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	const char *name;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return NULL;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		if (!gelf_getshdr(scn, sh) || sh->sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, sh->sh_name);
		if (name && strcmp(name, want) == 0)
			return scn;
	}
	return NULL;
}

static Elf_Data *eh_frame(Elf *elf, const struct wc_cfi_limits *lim,
			  uint64_t *addr)
{
	GElf_Shdr sh;
	Elf_Scn *scn = section(elf, ".eh_frame", &sh);

	if (!scn) {
		errno = ENOENT;
		return NULL;
	}
	if (sh.sh_size > lim->section_max) {
		errno = EFBIG;
		return NULL;
	}
	*addr = sh.sh_addr;
	return elf_getdata(scn, NULL);
}

static size_t value_size(uint8_t enc)
{
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		return 8;
	case DW_EH_PE_udata4:
	case DW_EH_PE_sdata4:
		return 4;
	case DW_EH_PE_udata2:
	case DW_EH_PE_sdata2:
		return 2;
	default:
		return 0; /* LEB128 and the rest: not used for code ranges */
	}
}

static bool read_value(uint8_t enc, const uint8_t *p, const uint8_t *end,
		       uint64_t *v)
{
	size_t n = value_size(enc);
	uint64_t u8v;
	uint32_t u4;
	uint16_t u2;

	if (!n || (size_t)(end - p) < n)
		return false;
	switch (enc & 0x0f) {
	case DW_EH_PE_udata4:
		memcpy(&u4, p, 4);
		*v = u4;
		break;
	case DW_EH_PE_sdata4:
		memcpy(&u4, p, 4);
		*v = (uint64_t)(int64_t)(int32_t)u4;
		break;
	case DW_EH_PE_udata2:
		memcpy(&u2, p, 2);
		*v = u2;
		break;
	case DW_EH_PE_sdata2:
		memcpy(&u2, p, 2);
		*v = (uint64_t)(int64_t)(int16_t)u2;
		break;
	default:
		memcpy(&u8v, p, 8);
		*v = u8v;
	}
	return true;
}

/* The FDE pointer encoding a CIE's augmentation gives ('R'). */
static uint8_t cie_encoding(const Dwarf_CIE *c)
{
	const char *a = c->augmentation;
	const uint8_t *d = c->augmentation_data;
	size_t n = c->augmentation_data_size, i = 0;
	uint8_t enc = DW_EH_PE_absptr;

	if (!a || a[0] == '\0')
		return enc;
	if (a[0] != 'z' || (!d && n))
		return 0xff;
	for (a++; *a; a++) {
		switch (*a) {
		case 'R':
			if (i >= n)
				return 0xff;
			enc = d[i++];
			break;
		case 'L':
			i++;
			break;
		case 'P':
			/* Only its size matters; an aligned one has none. */
			if (i >= n || !value_size(d[i]) ||
			    (d[i] & 0x70) == DW_EH_PE_aligned)
				return 0xff;
			i += 1 + value_size(d[i]);
			break;
		case 'S':
		case 'B':
			break;
		default:
			/* What follows cannot be found without knowing this. */
			return 0xff;
		}
		if (i > n)
			return 0xff;
	}
	return enc;
}

static const struct cie *cie_at(const struct build *b, uint64_t off)
{
	size_t lo = 0, hi = b->ncies;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (b->cies[mid].off == off)
			return &b->cies[mid];
		if (b->cies[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* An FDE's code range, or false when it cannot be read. */
static bool fde_range(const struct build *b, const Dwarf_FDE *f,
		      const Elf_Data *d, uint64_t sec_addr, struct fde *out)
{
	const struct cie *c = cie_at(b, f->CIE_pointer);
	const uint8_t *p = f->start, *end = f->end;
	uint64_t start, len;
	uint8_t enc;

	if (!c || c->enc == 0xff)
		return false;
	enc = c->enc;
	if ((enc & 0x80) || !read_value(enc, p, end, &start) ||
	    !read_value(enc & 0x0f, p + value_size(enc), end, &len))
		return false;
	switch (enc & 0x70) {
	case DW_EH_PE_absptr:
		break;
	case DW_EH_PE_pcrel:
		start += sec_addr + (uint64_t)(p - (const uint8_t *)d->d_buf);
		break;
	default:
		return false;
	}
	if (len == 0 || start + len < start)
		return false;
	out->start = start;
	out->end = start + len;
	return true;
}

static int add_cie(struct build *b, uint64_t off, const Dwarf_CIE *c)
{
	if (b->ncies == CIES_MAX)
		return 0;
	if (!b->cies) {
		b->cies = calloc(CIES_MAX, sizeof(*b->cies));
		if (!b->cies)
			return -1;
	}
	/* dwarf_next_cfi goes forward: the array stays sorted. */
	b->cies[b->ncies].off = off;
	b->cies[b->ncies].enc = cie_encoding(c);
	b->ncies++;
	return 0;
}

static int add_fde(struct build *b, const struct fde *f)
{
	struct fde *n;
	size_t cap;

	if (b->nfdes == b->lim->rows_max) {
		errno = E2BIG;
		return -1;
	}
	if (b->nfdes == b->fdes_cap) {
		cap = b->fdes_cap ? b->fdes_cap * 2 : 1024;
		n = realloc(b->fdes, cap * sizeof(*n));
		if (!n)
			return -1;
		b->fdes = n;
		b->fdes_cap = cap;
	}
	b->fdes[b->nfdes++] = *f;
	return 0;
}

static int list_fdes(struct build *b, Elf *elf, Elf_Data *d, uint64_t addr,
		     uint8_t src)
{
	const unsigned char *ident =
		(const unsigned char *)elf_getident(elf, NULL);
	Dwarf_Off off = 0, next;
	Dwarf_CFI_Entry ent;
	struct fde f;
	int r;

	/* CIE offsets are the section's own. */
	b->ncies = 0;
	while (off < d->d_size) {
		if (over_time(b, false)) {
			errno = ETIME;
			return -1;
		}
		/* Not always written on an error. */
		next = off;
		r = dwarf_next_cfi(ident, d, src == SRC_EH, off, &next, &ent);
		if (r > 0)
			break;
		if (r < 0) {
			/* Past an entry it could size, go on; else stop. */
			if (next == (Dwarf_Off)-1 || next <= off)
				break;
			b->t->stats.fdes_skipped++;
		} else if (dwarf_cfi_cie_p(&ent)) {
			if (add_cie(b, off, &ent.cie))
				return -1;
		} else if (ent.fde.end - ent.fde.start <= FDE_BYTES_MAX &&
			   fde_range(b, &ent.fde, d, addr, &f)) {
			f.src = src;
			if (add_fde(b, &f))
				return -1;
		} else {
			b->t->stats.fdes_skipped++;
		}
		if (next <= off)
			break;
		off = next;
	}
	return 0;
}

/* By start, .eh_frame's first where two start together. */
static int by_start(const void *a, const void *b)
{
	const struct fde *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return (int)x->src - (int)y->src;
}

/* --- rules --- */

static bool is_cfa_plus(const Dwarf_Op *ops, size_t nops, int64_t *off)
{
	if (nops == 1 && ops[0].atom == DW_OP_call_frame_cfa) {
		*off = 0;
		return true;
	}
	if (nops == 2 && ops[0].atom == DW_OP_call_frame_cfa &&
	    ops[1].atom == DW_OP_plus_uconst) {
		*off = (int64_t)ops[1].number;
		return true;
	}
	return false;
}

/* binutils' rule for a 16-byte PLT entry: rsp + 8, and 8 more once the
 * entry's push has run ((rip & 15) >= k). */
static bool is_plt(const Dwarf_Op *o, size_t n, uint16_t *k)
{
	if (n != 9 || o[0].atom != DW_OP_breg7 || o[0].number != 8 ||
	    o[1].atom != DW_OP_breg16 || o[1].number != 0 ||
	    o[2].atom != DW_OP_lit15 || o[3].atom != DW_OP_and ||
	    o[4].atom < DW_OP_lit0 || o[4].atom > DW_OP_lit15 ||
	    o[5].atom != DW_OP_ge || o[6].atom != DW_OP_lit3 ||
	    o[7].atom != DW_OP_shl || o[8].atom != DW_OP_plus)
		return false;
	*k = (uint16_t)(o[4].atom - DW_OP_lit0);
	return true;
}

static enum wc_cfa_kind cfa_rule(Dwarf_Frame *f, uint16_t *cfa)
{
	Dwarf_Op *ops;
	size_t nops;
	uint64_t reg;
	int64_t off;

	if (dwarf_frame_cfa(f, &ops, &nops) != 0 || nops == 0)
		return WC_CFA_UNSUPPORTED;
	if (is_plt(ops, nops, cfa))
		return WC_CFA_PLT;
	if (nops != 1)
		return WC_CFA_UNSUPPORTED;
	if (ops[0].atom == DW_OP_bregx) {
		reg = ops[0].number;
		off = (int64_t)ops[0].number2;
	} else if (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31) {
		reg = ops[0].atom - DW_OP_breg0;
		off = (int64_t)ops[0].number;
	} else {
		return WC_CFA_UNSUPPORTED;
	}
	if ((reg != REG_SP && reg != REG_FP) || off < 0 || off % 8 ||
	    off / 8 > UINT16_MAX)
		return WC_CFA_UNSUPPORTED;
	*cfa = (uint16_t)(off / 8);
	return reg == REG_SP ? WC_CFA_SP : WC_CFA_FP;
}

/* The return address's rule: at CFA - 8 (true), or undefined (*end). */
static bool ra_rule(Dwarf_Frame *f, int ra, bool *end)
{
	Dwarf_Op mem[3], *ops;
	size_t nops;
	int64_t off;

	*end = false;
	if (ra != REG_RA || dwarf_frame_register(f, ra, mem, &ops, &nops) != 0)
		return false;
	if (nops == 0 && ops == mem) {
		*end = true;
		return true;
	}
	return is_cfa_plus(ops, nops, &off) && off == -8;
}

static enum wc_fp_rule fp_rule(Dwarf_Frame *f, int8_t *slot)
{
	Dwarf_Op mem[3], *ops;
	size_t nops;
	int64_t off;

	if (dwarf_frame_register(f, REG_FP, mem, &ops, &nops) != 0)
		return WC_FP_LOST;
	if (nops == 0 && !ops)
		return WC_FP_SAME;
	if (!is_cfa_plus(ops, nops, &off) || off % 8 || off / 8 < INT8_MIN ||
	    off / 8 > INT8_MAX)
		return WC_FP_LOST;
	*slot = (int8_t)(off / 8);
	return WC_FP_AT;
}

static struct wc_cfi_row row_of(Dwarf_Frame *f, int ra, bool signal)
{
	struct wc_cfi_row r = {0};
	enum wc_cfa_kind kind;
	enum wc_fp_rule fp = WC_FP_LOST;
	bool end;

	if (signal) {
		kind = WC_CFA_SIGNAL;
	} else if (!ra_rule(f, ra, &end)) {
		kind = WC_CFA_UNSUPPORTED;
	} else if (end) {
		kind = WC_CFA_END;
	} else {
		kind = cfa_rule(f, &r.cfa);
		if (kind != WC_CFA_UNSUPPORTED)
			fp = fp_rule(f, &r.fp_slot);
	}
	if (kind == WC_CFA_UNSUPPORTED || kind == WC_CFA_END ||
	    kind == WC_CFA_SIGNAL)
		r.cfa = 0;
	r.rule = (uint8_t)(kind | fp << 4);
	return r;
}

/* --- rows --- */

static bool same_rule(const struct wc_cfi_row *a, const struct wc_cfi_row *b)
{
	return a->cfa == b->cfa && a->rule == b->rule &&
	       a->fp_slot == b->fp_slot;
}

static int put_row(struct build *b, struct wc_cfi_row r)
{
	struct wc_cfi_table *t = b->t;
	struct wc_cfi_row *last = t->n ? &t->rows[t->n - 1] : NULL;
	struct wc_cfi_row *n;
	size_t cap;

	if (last && last->off == r.off) {
		/* An empty range before it: the later rule holds. */
		*last = r;
		if (t->n > 1 && same_rule(&t->rows[t->n - 2], last))
			t->n--;
		return 0;
	}
	if (last && same_rule(last, &r))
		return 0;
	if (t->n == b->lim->rows_max) {
		errno = E2BIG;
		return -1;
	}
	if (t->n == t->cap) {
		cap = t->cap ? t->cap * 2 : 1024;
		if (cap > b->lim->rows_max)
			cap = b->lim->rows_max;
		n = realloc(t->rows, cap * sizeof(*n));
		if (!n)
			return -1;
		t->rows = n;
		t->cap = cap;
	}
	t->rows[t->n++] = r;
	return 0;
}

/* The executable segment that holds [start, end), as a file offset that
 * fits the rows' 32 bits. */
static bool code_off(const struct wc_elf_info *info, uint64_t start,
		     uint64_t end, uint64_t *off)
{
	unsigned i;

	for (i = 0; i < info->nexec && i < info->nsegs; i++) {
		const struct wc_elf_seg *s = &info->segs[i];

		if (start < s->vaddr || end - s->vaddr > s->filesz ||
		    s->off > UINT32_MAX || end - s->vaddr > UINT32_MAX - s->off)
			continue;
		*off = start - s->vaddr + s->off;
		return true;
	}
	return false;
}

/* The rows of one FDE, from libdw's reading of its instructions. */
static int fde_rows(struct build *b, Dwarf_CFI *cfi, const struct fde *f,
		    uint64_t base)
{
	uint64_t addr = f->start, start, end;
	unsigned n = 0;
	Dwarf_Frame *fr;
	bool signal;
	int ra;

	while (addr < f->end) {
		struct wc_cfi_row r;

		if (n++ == b->lim->fde_rows_max || over_time(b, n > 32))
			break;
		if (dwarf_cfi_addrframe(cfi, addr, &fr) != 0)
			break;
		ra = dwarf_frame_info(fr, &start, &end, &signal);
		if (ra < 0 || start > addr || end <= addr || end > f->end) {
			free(fr);
			break;
		}
		r = row_of(fr, ra, signal);
		free(fr);
		r.off = (uint32_t)(addr - f->start + base);
		if (wc_cfi_kind(&r) == WC_CFA_UNSUPPORTED)
			b->t->stats.unsupported++;
		if (put_row(b, r))
			return -1;
		addr = end;
	}
	if (addr == f->start) {
		b->t->stats.fdes_skipped++;
		return 0;
	}
	b->t->stats.fdes++;
	/* What the FDE did not cover, up to its end, has no rule. */
	return put_row(b, (struct wc_cfi_row){
				  .off = (uint32_t)(addr - f->start + base),
				  .rule = WC_CFA_NONE});
}

static int all_rows(struct build *b)
{
	uint64_t done = 0, base;
	size_t i;

	for (i = 0; i < b->nfdes; i++) {
		const struct fde *f = &b->fdes[i];

		if (over_time(b, true)) {
			errno = ETIME;
			return -1;
		}
		/* Segments may map addresses to offsets out of order (a
		 * hostile file's): rows only go forward.  .debug_frame only
		 * fills in where .eh_frame has nothing. */
		if (f->start < done || !b->cfi[f->src] ||
		    (f->src == SRC_DEBUG && i + 1 < b->nfdes &&
		     b->fdes[i + 1].start < f->end) ||
		    !code_off(b->info, f->start, f->end, &base) ||
		    (b->t->n && base < b->t->rows[b->t->n - 1].off)) {
			b->t->stats.fdes_skipped++;
			continue;
		}
		if (fde_rows(b, b->cfi[f->src], f, base))
			return -1;
		done = f->end;
	}
	return 0;
}

/* --- .debug_frame, from a debug file --- */

static bool x86_64(Elf *elf)
{
	GElf_Ehdr eh;

	return gelf_getehdr(elf, &eh) && eh.e_machine == EM_X86_64 &&
	       eh.e_ident[EI_CLASS] == ELFCLASS64;
}

/* The section's bytes, inflated into b->inflated if compressed, never
 * over the limit. */
static bool section_bytes(struct build *b, Elf_Scn *scn, const GElf_Shdr *sh,
			  const void **p, size_t *len)
{
	Elf_Data *raw = elf_rawdata(scn, NULL);
	Elf64_Chdr ch;
	uLongf out;

	if (!raw || !raw->d_buf || sh->sh_size > b->lim->section_max)
		return false;
	if (!(sh->sh_flags & SHF_COMPRESSED)) {
		*p = raw->d_buf;
		*len = raw->d_size;
		return true;
	}
	if (raw->d_size < sizeof(ch))
		return false;
	memcpy(&ch, raw->d_buf, sizeof(ch));
	if (ch.ch_type != ELFCOMPRESS_ZLIB || ch.ch_size == 0 ||
	    ch.ch_size > b->lim->section_max)
		return false;
	b->inflated = malloc(ch.ch_size);
	out = (uLongf)ch.ch_size;
	if (!b->inflated ||
	    uncompress((Bytef *)b->inflated, &out,
		       (const Bytef *)raw->d_buf + sizeof(ch),
		       (uLong)(raw->d_size - sizeof(ch))) != Z_OK ||
	    out != ch.ch_size)
		return false;
	*p = b->inflated;
	*len = ch.ch_size;
	return true;
}

/*
 * libdw reads .debug_frame only through a Dwarf, which would read every
 * debug section of the file (and inflate the compressed ones): give it an
 * image of one ELF file holding only this section.
 */
static Elf *frame_image(struct build *b, Elf *dbg, const void *sec, size_t len)
{
	static const char names[] = "\0.debug_frame\0.shstrtab";
	size_t shoff = (sizeof(Elf64_Ehdr) + len + sizeof(names) + 7) & ~7ul;
	Elf64_Ehdr *eh;
	Elf64_Shdr *sh;
	GElf_Ehdr src;

	if (!gelf_getehdr(dbg, &src) || len > SIZE_MAX / 2)
		return NULL;
	b->img = calloc(1, shoff + 3 * sizeof(Elf64_Shdr));
	if (!b->img)
		return NULL;
	eh = (Elf64_Ehdr *)b->img;
	memcpy(eh->e_ident, src.e_ident, EI_NIDENT);
	eh->e_type = src.e_type;
	eh->e_machine = src.e_machine;
	eh->e_version = EV_CURRENT;
	eh->e_ehsize = sizeof(*eh);
	eh->e_shoff = shoff;
	eh->e_shentsize = sizeof(*sh);
	eh->e_shnum = 3;
	eh->e_shstrndx = 2;
	memcpy(b->img + sizeof(*eh), sec, len);
	memcpy(b->img + sizeof(*eh) + len, names, sizeof(names));
	sh = (Elf64_Shdr *)(b->img + shoff);
	sh[1] = (Elf64_Shdr){.sh_name = 1,
			     .sh_type = SHT_PROGBITS,
			     .sh_offset = sizeof(*eh),
			     .sh_size = len,
			     .sh_addralign = 1};
	sh[2] = (Elf64_Shdr){.sh_name = 14,
			     .sh_type = SHT_STRTAB,
			     .sh_offset = sizeof(*eh) + len,
			     .sh_size = sizeof(names),
			     .sh_addralign = 1};
	return elf_memory(b->img, shoff + 3 * sizeof(Elf64_Shdr));
}

/* The debug file's FDEs, and its CFI in b->cfi[SRC_DEBUG]; nothing if it
 * has none or it cannot be read (the file's own table stands). */
static int add_debug_frame(struct build *b, Elf *dbg)
{
	Elf_Data d = {0};
	Elf_Scn *scn;
	GElf_Shdr sh;
	const void *p;
	size_t len;

	if (!x86_64(dbg) || !(scn = section(dbg, ".debug_frame", &sh)) ||
	    !section_bytes(b, scn, &sh, &p, &len) || len == 0)
		return 0;
	b->img_elf = frame_image(b, dbg, p, len);
	b->dw = b->img_elf ? dwarf_begin_elf(b->img_elf, DWARF_C_READ, NULL)
			   : NULL;
	b->cfi[SRC_DEBUG] = b->dw ? dwarf_getcfi(b->dw) : NULL;
	if (!b->cfi[SRC_DEBUG])
		return 0;
	d.d_buf = (void *)p;
	d.d_size = len;
	d.d_type = ELF_T_BYTE;
	return list_fdes(b, dbg, &d, 0, SRC_DEBUG);
}

static void build_end(struct build *b)
{
	if (b->cfi[SRC_EH])
		dwarf_cfi_end(b->cfi[SRC_EH]);
	if (b->dw)
		dwarf_end(b->dw);
	if (b->img_elf)
		elf_end(b->img_elf);
	free(b->img);
	free(b->inflated);
	free(b->cies);
	free(b->fdes);
}

int wc_cfi_build_with(struct wc_elf *e, const struct wc_elf_info *info,
		      struct wc_elf *debug, const struct wc_cfi_limits *lim,
		      struct wc_cfi_table *out)
{
	struct build b = {.lim = lim, .info = info, .t = out};
	Elf_Data *d;
	uint64_t addr = 0;
	int err = 0;

	memset(out, 0, sizeof(*out));
	b.cpu_end = wc_clock_ns(CLOCK_THREAD_CPUTIME_ID) + lim->cpu_ns;
	if (!x86_64(e->elf)) {
		errno = EINVAL;
		return -1;
	}
	errno = 0;
	d = eh_frame(e->elf, lim, &addr);
	if (d && d->d_buf && d->d_size) {
		b.cfi[SRC_EH] = dwarf_getcfi_elf(e->elf);
		if (b.cfi[SRC_EH] && list_fdes(&b, e->elf, d, addr, SRC_EH))
			err = errno;
	} else if (!d && errno == EFBIG) {
		err = EFBIG;
	}
	if (!err && debug && add_debug_frame(&b, debug->elf))
		err = errno;
	if (err)
		goto out;
	if (b.nfdes)
		qsort(b.fdes, b.nfdes, sizeof(*b.fdes), by_start);
	if (all_rows(&b))
		err = errno ? errno : ENOMEM;
	else if (out->n == 0)
		err = ENOENT;
	else if (!wc_cfi_valid(out->rows, out->n))
		err = EINVAL; /* never: rows only go forward */
out:
	build_end(&b);
	if (err) {
		wc_cfi_free(out);
		errno = err;
		return -1;
	}
	return 0;
}

int wc_cfi_build(struct wc_elf *e, const struct wc_elf_info *info,
		 const struct wc_cfi_limits *lim, struct wc_cfi_table *out)
{
	return wc_cfi_build_with(e, info, NULL, lim, out);
}

void wc_cfi_free(struct wc_cfi_table *t)
{
	free(t->rows);
	memset(t, 0, sizeof(*t));
}

bool wc_cfi_valid(const struct wc_cfi_row *rows, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (wc_cfi_kind(&rows[i]) > WC_CFA_UNSUPPORTED ||
		    wc_cfi_fp(&rows[i]) > WC_FP_LOST ||
		    (i && rows[i - 1].off >= rows[i].off))
			return false;
	}
	return true;
}

const struct wc_cfi_row *wc_cfi_find(const struct wc_cfi_table *t, uint64_t off)
{
	size_t lo = 0, hi = t->n;

	/* The last row at or before off. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->rows[mid].off <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &t->rows[lo - 1] : NULL;
}
