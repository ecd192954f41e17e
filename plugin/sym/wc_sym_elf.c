/* wc_sym_elf.c - see wc_sym_elf.h. */
#include <elf.h>
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "sym/wc_sym_elf.h"

/* Notes and debuglinks are a few dozen bytes: anything bigger is junk. */
#define NOTE_SECTION_MAX (64 * 1024)
#define DEBUGLINK_SECTION_MAX 4096
#define SHSTRTAB_MAX (1024 * 1024)
/* Sections a file may have (and whose flags we cache for untyped
 * symbols): linked binaries have dozens. */
#define SHNUM_MAX 65536
/* Program headers a file may have: real ones have about ten. */
#define PHNUM_MAX 1024
/* A debug file's CRC means reading it whole: not past this. */
#define CRC_FILE_MAX (1ULL << 30)

static int check_kind(struct wc_elf *e)
{
	GElf_Ehdr eh;

	if (!e->elf || elf_kind(e->elf) != ELF_K_ELF ||
	    !gelf_getehdr(e->elf, &eh) ||
	    (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)) {
		wc_elf_close(e);
		errno = EINVAL;
		return -1;
	}
	return 0;
}

/* The section count an extended header keeps in section 0's sh_size. */
static bool extended_shnum(int fd, bool is64, uint64_t shoff, uint64_t *n)
{
	Elf64_Shdr s64;
	Elf32_Shdr s32;

	if (is64) {
		if (pread(fd, &s64, sizeof(s64), (off_t)shoff) != sizeof(s64))
			return false;
		*n = s64.sh_size;
	} else {
		if (pread(fd, &s32, sizeof(s32), (off_t)shoff) != sizeof(s32))
			return false;
		*n = s32.sh_size;
	}
	return true;
}

/*
 * libelf allocates for every section header at elf_begin() and for every
 * program header at the first look, bounded only by the file's size: a
 * hostile gigabyte file could cost gigabytes.  Real binaries have dozens
 * of each, and their byte order is ours, so anything else is refused
 * before libelf sees it.
 */
static bool sane_header(int fd)
{
	unsigned char buf[sizeof(Elf64_Ehdr)];
	bool is64;
	uint64_t shoff, shnum, phnum;
	Elf64_Ehdr e64;
	Elf32_Ehdr e32;

	if (pread(fd, buf, sizeof(buf), 0) < (ssize_t)sizeof(e32) ||
	    memcmp(buf, ELFMAG, SELFMAG) ||
	    buf[EI_DATA] != (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
				     ? ELFDATA2MSB
				     : ELFDATA2LSB))
		return false;
	is64 = buf[EI_CLASS] == ELFCLASS64;
	if (is64) {
		memcpy(&e64, buf, sizeof(e64));
		shoff = e64.e_shoff;
		shnum = e64.e_shnum;
		phnum = e64.e_phnum;
	} else {
		memcpy(&e32, buf, sizeof(e32));
		shoff = e32.e_shoff;
		shnum = e32.e_shnum;
		phnum = e32.e_phnum;
	}
	if (shnum == 0 && shoff && !extended_shnum(fd, is64, shoff, &shnum))
		return false;
	return shnum <= SHNUM_MAX && phnum <= PHNUM_MAX;
}

int wc_elf_open_fd(struct wc_elf *e, int fd)
{
	elf_version(EV_CURRENT);
	e->fd = fd;
	e->elf = sane_header(fd) ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	return check_kind(e);
}

int wc_elf_open_mem(struct wc_elf *e, char *image, size_t len)
{
	elf_version(EV_CURRENT);
	e->fd = -1;
	e->elf = elf_memory(image, len);
	return check_kind(e);
}

void wc_elf_close(struct wc_elf *e)
{
	if (e->elf)
		elf_end(e->elf);
	if (e->fd >= 0)
		close(e->fd);
	e->elf = NULL;
	e->fd = -1;
}

static void read_segments(Elf *elf, struct wc_elf_info *out)
{
	size_t i, n;
	int pass;

	if (elf_getphdrnum(elf, &n) != 0)
		return;
	if (n > PHNUM_MAX)
		n = PHNUM_MAX;
	/* Code lives in executable segments: record those first, so a file
	 * with more than WC_ELF_MAX_SEGS loads keeps the ones that matter. */
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < n && out->nsegs < WC_ELF_MAX_SEGS; i++) {
			GElf_Phdr ph;
			bool x;

			if (!gelf_getphdr(elf, (int)i, &ph) ||
			    ph.p_type != PT_LOAD || ph.p_filesz == 0)
				continue;
			x = ph.p_flags & PF_X;
			if (x != (pass == 0))
				continue;
			out->segs[out->nsegs].off = ph.p_offset;
			out->segs[out->nsegs].vaddr = ph.p_vaddr;
			out->segs[out->nsegs].filesz = ph.p_filesz;
			out->nsegs++;
			out->nexec += x;
		}
	}
}

/* The GNU build-id in one block of notes, if there is one. */
static bool build_id_in(Elf_Data *d, struct wc_elf_info *out)
{
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nh;

	while (off < d->d_size &&
	       (next = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    memcmp((char *)d->d_buf + name_off, "GNU", 4) == 0 &&
		    nh.n_descsz > 0 && nh.n_descsz <= WC_ELF_BUILD_ID_MAX) {
			memcpy(out->build_id, (char *)d->d_buf + desc_off,
			       nh.n_descsz);
			out->build_id_len = nh.n_descsz;
			return true;
		}
		off = next;
	}
	return false;
}

/* Section headers can be stripped away: then try the PT_NOTE segments. */
static void build_id_from_phdrs(Elf *elf, struct wc_elf_info *out)
{
	size_t i, n;

	if (elf_getphdrnum(elf, &n) != 0)
		return;
	if (n > PHNUM_MAX)
		n = PHNUM_MAX;
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;
		Elf_Data *d;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_NOTE ||
		    ph.p_filesz > NOTE_SECTION_MAX)
			continue;
		d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz,
					 ph.p_align == 8 ? ELF_T_NHDR8
							 : ELF_T_NHDR);
		if (d && build_id_in(d, out))
			return;
	}
}

static void read_debuglink(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh,
			   struct wc_elf_info *out)
{
	Elf_Data *d;
	size_t namelen, crc_off;
	uint32_t crc;
	GElf_Ehdr eh;

	if (sh->sh_type == SHT_NOBITS || sh->sh_size > DEBUGLINK_SECTION_MAX)
		return;
	d = elf_getdata(scn, NULL);
	if (!d || !d->d_buf || !gelf_getehdr(elf, &eh))
		return;
	namelen = strnlen(d->d_buf, d->d_size);
	crc_off = (namelen + 1 + 3) & ~(size_t)3;
	if (namelen == 0 || namelen >= WC_ELF_DEBUGLINK_MAX ||
	    crc_off + 4 > d->d_size)
		return;
	memcpy(out->debuglink, d->d_buf, namelen);
	out->debuglink[namelen] = '\0';
	memcpy(&crc, (char *)d->d_buf + crc_off, 4);
	/* The word is in the file's byte order. */
	if ((eh.e_ident[EI_DATA] == ELFDATA2MSB) !=
	    (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__))
		crc = __builtin_bswap32(crc);
	out->debuglink_crc = crc;
}

static void read_sections(Elf *elf, struct wc_elf_info *out)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr strsh;
	bool have_strs = elf_getshdrstrndx(elf, &shstrndx) == 0;

	/* Section names are read whole: a few hundred bytes, if sane. */
	if (have_strs && (!gelf_getshdr(elf_getscn(elf, shstrndx), &strsh) ||
			  strsh.sh_size > SHSTRTAB_MAX))
		have_strs = false;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB && sh.sh_entsize &&
		    sh.sh_size / sh.sh_entsize > 1)
			out->has_symtab = true;
		if (sh.sh_type == SHT_NOTE && !out->build_id_len &&
		    sh.sh_size <= NOTE_SECTION_MAX) {
			Elf_Data *d = elf_getdata(scn, NULL);

			if (d)
				build_id_in(d, out);
		}
		name = have_strs ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;
		if (name && strcmp(name, ".gnu_debuglink") == 0)
			read_debuglink(elf, scn, &sh, out);
	}
}

int wc_elf_read_info(struct wc_elf *e, struct wc_elf_info *out)
{
	memset(out, 0, sizeof(*out));
	read_segments(e->elf, out);
	read_sections(e->elf, out);
	if (!out->build_id_len)
		build_id_from_phdrs(e->elf, out);
	return 0;
}

static Elf_Scn *find_section(Elf *elf, Elf64_Word type, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, sh) && sh->sh_type == type)
			return scn;
	return NULL;
}

/* Which sections hold code, for symbols without a type (hand-written
 * assembly often has no .type).  NULL if it cannot be known. */
static uint8_t *exec_sections(Elf *elf, size_t *n)
{
	Elf_Scn *scn = NULL;
	uint8_t *x;

	if (elf_getshdrnum(elf, n) != 0 || *n == 0 || *n > SHNUM_MAX)
		return NULL;
	x = calloc(*n, 1);
	while (x && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		size_t i = elf_ndxscn(scn);

		if (i < *n && gelf_getshdr(scn, &sh))
			x[i] = (sh.sh_flags & SHF_EXECINSTR) != 0;
	}
	return x;
}

/* Higher wins among symbols at one address: typed functions over
 * untyped labels, sized over unsized, global over weak over local. */
static uint32_t rank_of(const GElf_Sym *s)
{
	uint32_t rank = 0;
	int type = GELF_ST_TYPE(s->st_info);
	int bind = GELF_ST_BIND(s->st_info);

	if (type == STT_FUNC || type == STT_GNU_IFUNC)
		rank += 8;
	if (s->st_size)
		rank += 4;
	if (bind == STB_GLOBAL)
		rank += 2;
	else if (bind == STB_WEAK)
		rank += 1;
	return rank;
}

struct sym_pass {
	Elf *elf;
	size_t strndx;
	uint8_t *xsec;
	size_t nxsec;
	bool xsec_done;
};

static bool wanted(struct sym_pass *sp, const GElf_Sym *s)
{
	int type = GELF_ST_TYPE(s->st_info);

	if (s->st_value == 0 || s->st_shndx == SHN_UNDEF)
		return false;
	if (type == STT_FUNC || type == STT_GNU_IFUNC)
		return true;
	if (type != STT_NOTYPE || GELF_ST_BIND(s->st_info) == STB_LOCAL ||
	    s->st_shndx >= SHN_LORESERVE)
		return false;
	if (!sp->xsec_done) {
		sp->xsec = exec_sections(sp->elf, &sp->nxsec);
		sp->xsec_done = true;
	}
	return sp->xsec && s->st_shndx < sp->nxsec && sp->xsec[s->st_shndx];
}

ssize_t wc_elf_symbols(struct wc_elf *e, bool dynsym, struct wc_symtab *t)
{
	struct sym_pass sp = {.elf = e->elf};
	GElf_Shdr sh, strsh;
	Elf_Scn *scn, *strscn;
	Elf_Data *d;
	size_t i, count, entsize;
	ssize_t added = 0;

	scn = find_section(e->elf, dynsym ? SHT_DYNSYM : SHT_SYMTAB, &sh);
	if (!scn) {
		errno = ENOENT;
		return -1;
	}
	entsize = gelf_fsize(e->elf, ELF_T_SYM, 1, EV_CURRENT);
	strscn = elf_getscn(e->elf, sh.sh_link);
	if (!entsize || sh.sh_entsize != entsize || !strscn ||
	    !gelf_getshdr(strscn, &strsh) || strsh.sh_type != SHT_STRTAB) {
		errno = EINVAL;
		return -1;
	}
	/* libelf reads both sections whole: refuse before it allocates. */
	if (sh.sh_size > t->max_bytes || strsh.sh_size > t->max_bytes) {
		errno = E2BIG;
		return -1;
	}
	d = elf_getdata(scn, NULL);
	if (!d) {
		errno = EINVAL;
		return -1;
	}
	count = d->d_size / entsize;
	sp.strndx = sh.sh_link;
	for (i = 1; i < count; i++) {
		GElf_Sym s;
		const char *name;

		if (!gelf_getsym(d, (int)i, &s) || !wanted(&sp, &s))
			continue;
		name = elf_strptr(e->elf, sp.strndx, s.st_name);
		if (!name || !name[0])
			continue;
		if (wc_symtab_add(t, s.st_value, s.st_size, name, SIZE_MAX,
				  rank_of(&s))) {
			if (errno != E2BIG && errno != ENOMEM)
				continue;
			added = -1;
			break;
		}
		added++;
	}
	free(sp.xsec);
	return added;
}

bool wc_elf_vaddr(const struct wc_elf_seg *segs, unsigned nsegs, uint64_t off,
		  uint64_t *vaddr)
{
	unsigned i;

	for (i = 0; i < nsegs; i++) {
		const struct wc_elf_seg *s = &segs[i];

		if (off >= s->off && off - s->off < s->filesz) {
			*vaddr = off - s->off + s->vaddr;
			return true;
		}
	}
	return false;
}

int wc_elf_crc32(int fd, uint32_t *crc)
{
	unsigned char buf[64 * 1024];
	uLong c = crc32(0L, Z_NULL, 0);
	struct stat st;
	uint64_t at = 0, size;
	ssize_t n;

	/* The size now is the bound: a file that grows is not chased. */
	if (fstat(fd, &st))
		return -1;
	size = (uint64_t)st.st_size;
	if (size > CRC_FILE_MAX) {
		errno = EFBIG;
		return -1;
	}
	while (at < size) {
		size_t want = sizeof(buf);

		if (want > size - at)
			want = (size_t)(size - at);
		n = pread(fd, buf, want, (off_t)at);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		c = crc32(c, buf, (uInt)n);
		at += (uint64_t)n;
	}
	*crc = (uint32_t)c;
	return 0;
}
