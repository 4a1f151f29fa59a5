/*
 * h5fd_strata.c — the Strata HDF5 virtual file driver's class: HDF5's
 * callbacks over the store side of h5_internal.h (strata_h5.h is the
 * contract, docs/hdf5.md the design).
 *
 * One source, two builds:
 *   - static (libstrata_h5.a/.so): against Debian's HDF5 1.10 headers; a
 *     program registers the driver (H5FD_strata_init()) and sets it on a
 *     fapl with H5Pset_fapl_strata(), which carries the configuration as
 *     the fapl's driver info (struct sh5_fa, copied by value);
 *   - plugin (-DSTRATA_H5_PLUGIN, BUILD/hdf5-plugin/libh5fd_strata.so):
 *     against h5fd_abi.h, the 1.14/2.0 class layout; HDF5 loads it by
 *     name (HDF5_DRIVER=strata) and hands it the configuration string
 *     (HDF5_DRIVER_CONFIG), which the driver reads back from the fapl with
 *     H5Pget_driver_config_str().
 * The plugin links no libhdf5: it calls the two HDF5 functions it needs
 * through pointers looked up at its first open in the libhdf5 already
 * loaded in the process — the one that exports H5Pget_driver_config_str
 * (1.14 and later), found among the loaded objects with dl_iterate_phdr()
 * and opened with RTLD_NOLOAD — so it binds to the library that loaded it
 * (h5py's bundled libhdf5, loaded RTLD_LOCAL) and never to another one in
 * the process (docs/hdf5.md, "The plugin").
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef STRATA_H5_PLUGIN
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>

#include "gateways/hdf5/h5fd_abi.h"
#else
#include <hdf5.h>

#include "gateways/hdf5/strata_h5.h"
#endif

#include "gateways/hdf5/h5_internal.h"

/** Largest address: 2^48 blocks of the smallest block size (512 B). */
#define SH5_MAXADDR ((haddr_t)((1ull << 57) - 1))

/** An open file as HDF5 sees it: HDF5's head, then ours. */
struct sh5_h5fd {
	H5FD_t hf_pub;
	struct sh5_file *hf_file;
	struct sh5_fa hf_fa;
};

/* ---------------------------------------------- reaching HDF5 itself */

enum sh5_err_kind { SH5_E_OPEN, SH5_E_READ, SH5_E_WRITE, SH5_E_FLUSH };

#ifdef STRATA_H5_PLUGIN

static struct {
	pthread_once_t once;
	h5abi_get_driver_config_str_t config_str;
	h5abi_epush2_t epush2;
	hid_t *cls, *maj, *min[4];
} sh5_lib = {.once = PTHREAD_ONCE_INIT};

/* dl_iterate_phdr callback: the first loaded object that exports
 * H5Pget_driver_config_str (HDF5 >= 1.14) gives every pointer. */
static int sh5_lib_find(struct dl_phdr_info *info, size_t size, void *arg)
{
	static const char *const mins[4] = {"H5E_CANTOPENFILE_g",
		"H5E_READERROR_g", "H5E_WRITEERROR_g", "H5E_CANTFLUSH_g"};
	void *h;

	if (info->dlpi_name == NULL || info->dlpi_name[0] == '\0')
		return 0;
	h = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
	if (h == NULL)
		return 0;
	sh5_lib.config_str = (h5abi_get_driver_config_str_t)
		dlsym(h, "H5Pget_driver_config_str");
	if (sh5_lib.config_str == NULL) {
		dlclose(h);
		return 0;
	}
	/* kept open (a reference to a library that is loaded anyway) */
	sh5_lib.epush2 = (h5abi_epush2_t)dlsym(h, "H5Epush2");
	sh5_lib.cls = dlsym(h, "H5E_ERR_CLS_g");
	sh5_lib.maj = dlsym(h, "H5E_VFL_g");
	for (int i = 0; i < 4; i++)
		sh5_lib.min[i] = dlsym(h, mins[i]);
	return 1;
}

static void sh5_lib_init(void)
{
	dl_iterate_phdr(sh5_lib_find, NULL);
}

/* The configuration string of fapl (HDF5_DRIVER_CONFIG or
 * H5Pset_driver_by_name()'s), into buf; "" when none. */
static int sh5_fapl_config(hid_t fapl, char *buf, size_t size)
{
	const char *env = getenv("HDF5_DRIVER_CONFIG");
	ssize_t n = -1;

	pthread_once(&sh5_lib.once, sh5_lib_init);
	buf[0] = '\0';
	if (sh5_lib.config_str != NULL)
		n = sh5_lib.config_str(fapl, buf, size);
	if (n >= (ssize_t)size)
		return sh5_fail(-ENAMETOOLONG, "strata h5: driver config string"
				" longer than %zu bytes", size - 1);
	if (n <= 0 && env != NULL)	/* no libhdf5 >= 1.14 found: its env */
		snprintf(buf, size, "%s", env);
	return 0;
}

static void sh5_push(enum sh5_err_kind k, const char *func, unsigned line)
{
	pthread_once(&sh5_lib.once, sh5_lib_init);
	if (sh5_lib.epush2 != NULL && sh5_lib.cls != NULL &&
	    sh5_lib.maj != NULL && sh5_lib.min[k] != NULL)
		sh5_lib.epush2(H5E_DEFAULT, __FILE__, func, line, *sh5_lib.cls,
			       *sh5_lib.maj, *sh5_lib.min[k], "%s",
			       sh5_errmsg_get());
	else
		fprintf(stderr, "%s\n", sh5_errmsg_get());
}

#else /* the static build: HDF5 1.10's own symbols */

static void sh5_push(enum sh5_err_kind k, const char *func, unsigned line)
{
	hid_t mins[4] = {H5E_CANTOPENFILE, H5E_READERROR, H5E_WRITEERROR,
			 H5E_CANTFLUSH};

	H5Epush2(H5E_DEFAULT, __FILE__, func, line, H5E_ERR_CLS, H5E_VFL,
		 mins[k], "%s", sh5_errmsg_get());
}

#endif

#define SH5_PUSH(k) sh5_push((k), __func__, __LINE__)

/* The configuration of an open: the fapl's driver info (static build) or
 * configuration string (plugin), into fa. */
static int sh5_fa_from_fapl(hid_t fapl, struct sh5_fa *fa)
{
#ifdef STRATA_H5_PLUGIN
	char config[4 * SH5_PATH_MAX];
	int rc = sh5_fapl_config(fapl, config, sizeof config);

	if (rc != 0)
		return rc;
	return sh5_fa_parse(fa, NULL, config);
#else
	const struct sh5_fa *info = H5Pget_driver_info(fapl);

	if (info == NULL || info->fa_magic != SH5_FA_MAGIC)
		return sh5_fa_parse(fa, NULL, NULL); /* the environment's */
	*fa = *info;
	return 0;
#endif
}

/* -------------------------------------------------- the class's calls */

static void *sh5_fapl_copy(const void *fapl)
{
	struct sh5_fa *c = malloc(sizeof *c);

	if (c != NULL)
		memcpy(c, fapl, sizeof *c);
	return c;
}

static herr_t sh5_fapl_free(void *fapl)
{
	free(fapl);
	return 0;
}

static void *sh5_fapl_get(H5FD_t *file)
{
	return sh5_fapl_copy(&((struct sh5_h5fd *)file)->hf_fa);
}

static uint32_t sh5_flags_of(unsigned flags)
{
	uint32_t o = 0;

	if (flags & H5F_ACC_RDWR)
		o |= SH5_O_RDWR;
	if (flags & H5F_ACC_TRUNC)
		o |= SH5_O_TRUNC;
	if (flags & H5F_ACC_EXCL)
		o |= SH5_O_EXCL;
	if (flags & H5F_ACC_CREAT)
		o |= SH5_O_CREAT;
	return o;
}

static H5FD_t *sh5_h5_open(const char *name, unsigned flags, hid_t fapl,
			   haddr_t maxaddr)
{
	struct sh5_h5fd *h = calloc(1, sizeof *h);
	int rc;

	if (h == NULL) {
		sh5_fail(-ENOMEM, "strata h5: out of memory");
		SH5_PUSH(SH5_E_OPEN);
		return NULL;
	}
	rc = sh5_fa_from_fapl(fapl, &h->hf_fa);
	if (rc == 0)
		rc = sh5_open(name, &h->hf_fa, sh5_flags_of(flags),
			      &h->hf_file);
	if (rc != 0) {
		free(h);
		SH5_PUSH(SH5_E_OPEN);
		return NULL;
	}
	return &h->hf_pub;
}

static herr_t sh5_h5_close(H5FD_t *file)
{
	struct sh5_h5fd *h = (struct sh5_h5fd *)file;
	int rc = sh5_close(h->hf_file);

	free(h);
	if (rc != 0) {
		SH5_PUSH(SH5_E_FLUSH);
		return -1;
	}
	return 0;
}

static int sh5_h5_cmp(const H5FD_t *a, const H5FD_t *b)
{
	return sh5_cmp(((const struct sh5_h5fd *)a)->hf_file,
		       ((const struct sh5_h5fd *)b)->hf_file);
}

/* What HDF5 may do for us: the sec2 driver's set, less its POSIX handle
 * and SWMR (an object has neither). */
static herr_t sh5_h5_query(const H5FD_t *file, unsigned long *flags)
{
	*flags = H5FD_FEAT_AGGREGATE_METADATA | H5FD_FEAT_ACCUMULATE_METADATA |
		 H5FD_FEAT_DATA_SIEVE | H5FD_FEAT_AGGREGATE_SMALLDATA;
	return 0;
}

static haddr_t sh5_h5_get_eoa(const H5FD_t *file, H5FD_mem_t type)
{
	return ((const struct sh5_h5fd *)file)->hf_file->fi_eoa;
}

static herr_t sh5_h5_set_eoa(H5FD_t *file, H5FD_mem_t type, haddr_t addr)
{
	struct sh5_file *f = ((struct sh5_h5fd *)file)->hf_file;

	if (addr > SH5_MAXADDR) {
		sh5_fail(-EFBIG, "strata h5: %s: end of address %llu past the "
			 "driver's largest", f->fi_name,
			 (unsigned long long)addr);
		SH5_PUSH(SH5_E_WRITE);
		return -1;
	}
	f->fi_eoa = addr;
	return 0;
}

static haddr_t sh5_h5_get_eof(const H5FD_t *file, H5FD_mem_t type)
{
	return ((const struct sh5_h5fd *)file)->hf_file->fi_eof;
}

static herr_t sh5_h5_get_handle(H5FD_t *file, hid_t fapl, void **handle)
{
	*handle = &((struct sh5_h5fd *)file)->hf_file->fi_obj;
	return 0;
}

static herr_t sh5_h5_read(H5FD_t *file, H5FD_mem_t type, hid_t dxpl,
			  haddr_t addr, size_t size, void *buf)
{
	if (sh5_read(((struct sh5_h5fd *)file)->hf_file, addr, size, buf)
	    != 0) {
		SH5_PUSH(SH5_E_READ);
		return -1;
	}
	return 0;
}

static herr_t sh5_h5_write(H5FD_t *file, H5FD_mem_t type, hid_t dxpl,
			   haddr_t addr, size_t size, const void *buf)
{
	if (sh5_write(((struct sh5_h5fd *)file)->hf_file, addr, size, buf)
	    != 0) {
		SH5_PUSH(SH5_E_WRITE);
		return -1;
	}
	return 0;
}

static herr_t sh5_h5_flush(H5FD_t *file, hid_t dxpl, hbool_t closing)
{
	if (sh5_flush(((struct sh5_h5fd *)file)->hf_file) != 0) {
		SH5_PUSH(SH5_E_FLUSH);
		return -1;
	}
	return 0;
}

static herr_t sh5_h5_truncate(H5FD_t *file, hid_t dxpl, hbool_t closing)
{
	if (sh5_truncate(((struct sh5_h5fd *)file)->hf_file) != 0) {
		SH5_PUSH(SH5_E_WRITE);
		return -1;
	}
	return 0;
}

#ifdef STRATA_H5_PLUGIN
/* H5Fdelete(): the object and its record. */
static herr_t sh5_h5_del(const char *name, hid_t fapl)
{
	struct sh5_fa fa;
	int rc = sh5_fa_from_fapl(fapl, &fa);

	if (rc == 0)
		rc = sh5_delete(name, &fa);
	if (rc != 0) {
		SH5_PUSH(SH5_E_OPEN);
		return -1;
	}
	return 0;
}
#endif

static const H5FD_class_t sh5_class = {
#ifdef STRATA_H5_PLUGIN
	.version = H5FD_CLASS_VERSION,
	.value = 501, /* STRATA_H5_VALUE */
	.del = sh5_h5_del,
#endif
	.name = "strata",
	.maxaddr = SH5_MAXADDR,
	.fc_degree = H5F_CLOSE_WEAK,
	.fapl_size = sizeof(struct sh5_fa),
	.fapl_get = sh5_fapl_get,
	.fapl_copy = sh5_fapl_copy,
	.fapl_free = sh5_fapl_free,
	.open = sh5_h5_open,
	.close = sh5_h5_close,
	.cmp = sh5_h5_cmp,
	.query = sh5_h5_query,
	.get_eoa = sh5_h5_get_eoa,
	.set_eoa = sh5_h5_set_eoa,
	.get_eof = sh5_h5_get_eof,
	.get_handle = sh5_h5_get_handle,
	.read = sh5_h5_read,
	.write = sh5_h5_write,
	.flush = sh5_h5_flush,
	.truncate = sh5_h5_truncate,
	.fl_map = H5FD_FLMAP_DICHOTOMY,
};

/* ------------------------------------------------------ entry points */

#ifdef STRATA_H5_PLUGIN

__attribute__((visibility("default"))) H5PL_type_t H5PLget_plugin_type(void)
{
	return H5PL_TYPE_VFD;
}

__attribute__((visibility("default"))) const void *H5PLget_plugin_info(void)
{
	return &sh5_class;
}

#else

_Static_assert(STRATA_H5_URL_MAX == SH5_URL_MAX, "URL limit");
_Static_assert(STRATA_H5_PATH_MAX == SH5_PATH_MAX, "path limit");

hid_t H5FD_strata_init(void)
{
	static hid_t id = H5I_INVALID_HID;

	if (id < 0 || H5Iget_type(id) != H5I_VFL)
		id = H5FDregister(&sh5_class);
	return id;
}

herr_t H5Pset_fapl_strata(hid_t fapl, const char *url,
			  const struct strata_h5_conf *conf)
{
	struct sh5_fa fa;
	int rc = sh5_fa_parse(&fa, url, NULL);

	if (rc == 0 && conf != NULL) {
		rc = sh5_fa_set_path(fa.fa_data, conf->data_dir,
				     "data directory");
		if (rc == 0)
			rc = sh5_fa_set_path(fa.fa_cluster, conf->cluster_file,
					     "cluster file");
		if (rc == 0)
			rc = sh5_fa_set_path(fa.fa_nvram, conf->nvram_dir,
					     "NVRAM directory");
		fa.fa_block_size = conf->block_size;
		fa.fa_tier = conf->tier;
		fa.fa_dev_size = conf->dev_size;
		if (rc == 0)
			rc = sh5_fa_check(&fa);
	}
	if (rc == 0 && H5Pisa_class(fapl, H5P_FILE_ACCESS) <= 0)
		rc = sh5_fail(-EINVAL, "strata h5: H5Pset_fapl_strata: %lld is "
			      "not a file access property list",
			      (long long)fapl);
	if (rc == 0 && H5Pset_driver(fapl, H5FD_STRATA, &fa) < 0)
		rc = sh5_fail(-EINVAL, "strata h5: H5Pset_driver refused the "
			      "strata driver on fapl %lld", (long long)fapl);
	return rc == 0 ? 0 : -1;
}

int strata_h5_errno(void)
{
	return sh5_errno_get();
}

const char *strata_h5_errmsg(void)
{
	return sh5_errmsg_get();
}

#endif
