/*
 * meta_txn_ut.c — unit tests of core/meta_txn.h, the engine's metadata
 * contract for code outside it: records in place, forward and reverse
 * scans over a prefix, stops, errors and deletes from inside a scan,
 * nested transactions, a table's count and a scan resuming after a key
 * (table unit), the member listing.  Suite "meta_txn" (module
 * core).
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/limits.h"
#include "core/meta.h"
#include "core/meta_txn.h"
#include "core/types.h"
#include "tests/ut.h"

int meta_txn_ut_add(void);

/* What a scan saw: the keys' last bytes, in order. */
struct seen {
	char s_keys[16];
	uint32_t s_n;
	uint32_t s_stop_at; /* 0: never */
	int s_ret;          /* returned on every record */
};

static int seen_one(void *arg, const struct meta_rec *r)
{
	struct seen *s = arg;

	s->s_keys[s->s_n++] = ((const char *)r->mc_key)[r->mc_klen - 1];
	if (s->s_stop_at != 0 && s->s_n == s->s_stop_at)
		return META_SCAN_STOP;
	return s->s_ret;
}

/* Scan sys from..prefix (rev or not) into a string of last bytes. */
static int scan_sys(MDB_txn *txn, struct meta *m, const char *from,
		    const char *prefix, bool rev, struct seen *s)
{
	return meta_scan(txn, m, &(struct meta_scan){
		.ms_table = META_T_SYS, .ms_from = from,
		.ms_flen = from != NULL ? strlen(from) : 0,
		.ms_prefix = prefix, .ms_plen = strlen(prefix), .ms_rev = rev,
		.ms_write = s->s_ret == META_SCAN_DEL, .ms_fn = seen_one,
		.ms_arg = s, .ms_what = "ut scan"});
}

static int fail_one(void *arg, const struct meta_rec *r)
{
	return -EIO;
}

static void test_records_scans(void)
{
	const char *dir = ut_tmpdir("meta_txn");
	struct meta m;
	struct meta_rec r;
	struct seen s;
	MDB_txn *txn;
	char key[8];

	CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
	CU_ASSERT_EQUAL_FATAL(meta_open(&m, dir, 16ull << 20, META_CREATE), 0);
	CU_ASSERT_EQUAL_FATAL(meta_wtxn_begin(&m, &txn, "ut"), 0);
	for (char c = '1'; c <= '5'; c++) {
		snprintf(key, sizeof key, "a/%c", c);
		CU_ASSERT_EQUAL(meta_put(txn, &m, META_T_SYS, key, 3, &c, 1,
					 "ut"), 0);
	}
	CU_ASSERT_EQUAL(meta_put(txn, &m, META_T_SYS, "a0", 2, "x", 1, "ut"), 0);
	CU_ASSERT_EQUAL(meta_put(txn, &m, META_T_SYS, "b/1", 3, "y", 1, "ut"),
			0);
	CU_ASSERT_EQUAL(meta_wtxn_commit(&m, txn, "ut"), 0);

	CU_ASSERT_EQUAL_FATAL(meta_rtxn_begin(&m, &txn, "ut"), 0);
	CU_ASSERT_EQUAL(meta_get(txn, &m, META_T_SYS, "a/3", 3, &r, "ut"), 0);
	CU_ASSERT_EQUAL(r.mc_vlen, 1);
	CU_ASSERT_EQUAL(((const char *)r.mc_val)[0], '3');
	CU_ASSERT_EQUAL(meta_get(txn, &m, META_T_SYS, "a/9", 3, &r, "ut"),
			-ENOENT);
	/* forward over the prefix, from its start and from a key */
	s = (struct seen){.s_n = 0};
	CU_ASSERT_EQUAL(scan_sys(txn, &m, NULL, "a/", false, &s), 0);
	CU_ASSERT_EQUAL(s.s_n, 5);
	CU_ASSERT_NSTRING_EQUAL(s.s_keys, "12345", 5);
	s = (struct seen){.s_n = 0};
	CU_ASSERT_EQUAL(scan_sys(txn, &m, "a/3", "a/", false, &s), 0);
	CU_ASSERT_EQUAL(s.s_n, 3);
	CU_ASSERT_NSTRING_EQUAL(s.s_keys, "345", 3);
	/* stopped after two */
	s = (struct seen){.s_stop_at = 2};
	CU_ASSERT_EQUAL(scan_sys(txn, &m, NULL, "a/", false, &s), 0);
	CU_ASSERT_EQUAL(s.s_n, 2);
	/* back from the end of the prefix ("a0" follows "a/"), and from a
	 * key past every record of a prefix */
	s = (struct seen){.s_n = 0};
	CU_ASSERT_EQUAL(scan_sys(txn, &m, "a0", "a/", true, &s), 0);
	CU_ASSERT_EQUAL(s.s_n, 5);
	CU_ASSERT_NSTRING_EQUAL(s.s_keys, "54321", 5);
	s = (struct seen){.s_n = 0};
	CU_ASSERT_EQUAL(scan_sys(txn, &m, "a/3", "a/", true, &s), 0);
	CU_ASSERT_EQUAL(s.s_n, 2);
	CU_ASSERT_NSTRING_EQUAL(s.s_keys, "21", 2);
	s = (struct seen){.s_n = 0};
	CU_ASSERT_EQUAL(scan_sys(txn, &m, "b0", "b/", true, &s), 0);
	CU_ASSERT_EQUAL(s.s_n, 1);
	/* the function's error ends the scan and comes back */
	CU_ASSERT_EQUAL(meta_scan(txn, &m, &(struct meta_scan){
		.ms_table = META_T_SYS, .ms_prefix = "a/", .ms_plen = 2,
		.ms_fn = fail_one, .ms_what = "ut"}), -EIO);
	meta_rtxn_put(&m, txn);

	/* delete from inside a scan: every record of "a/" but the last */
	CU_ASSERT_EQUAL_FATAL(meta_wtxn_begin(&m, &txn, "ut"), 0);
	s = (struct seen){.s_stop_at = 5, .s_ret = META_SCAN_DEL};
	CU_ASSERT_EQUAL(scan_sys(txn, &m, NULL, "a/", false, &s), 0);
	CU_ASSERT_EQUAL(s.s_n, 5);
	CU_ASSERT_NSTRING_EQUAL(s.s_keys, "12345", 5);
	CU_ASSERT_EQUAL(meta_del(txn, &m, META_T_SYS, "zz", 2, "ut"), 0);
	CU_ASSERT_EQUAL(meta_del(txn, &m, META_T_SYS, "a0", 2, "ut"), 0);
	CU_ASSERT_EQUAL(meta_wtxn_commit(&m, txn, "ut"), 0);
	CU_ASSERT_EQUAL_FATAL(meta_rtxn_begin(&m, &txn, "ut"), 0);
	s = (struct seen){.s_n = 0};
	CU_ASSERT_EQUAL(scan_sys(txn, &m, NULL, "a", false, &s), 0);
	CU_ASSERT_EQUAL(s.s_n, 1);
	CU_ASSERT_EQUAL(s.s_keys[0], '5');
	meta_rtxn_put(&m, txn);
	meta_close(&m);
}

static void test_nested(void)
{
	const char *dir = ut_tmpdir("meta_ntxn");
	struct meta m;
	struct meta_rec r;
	MDB_txn *txn, *child;

	CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
	CU_ASSERT_EQUAL_FATAL(meta_open(&m, dir, 16ull << 20, META_CREATE), 0);
	CU_ASSERT_EQUAL_FATAL(meta_wtxn_begin(&m, &txn, "ut"), 0);
	CU_ASSERT_EQUAL_FATAL(meta_ntxn_begin(&m, txn, &child, "ut"), 0);
	CU_ASSERT_EQUAL(meta_put(child, &m, META_T_SYS, "gone", 4, "1", 1,
				 "ut"), 0);
	meta_txn_abort(child);
	CU_ASSERT_EQUAL(meta_get(txn, &m, META_T_SYS, "gone", 4, &r, "ut"),
			-ENOENT);
	CU_ASSERT_EQUAL_FATAL(meta_ntxn_begin(&m, txn, &child, "ut"), 0);
	CU_ASSERT_EQUAL(meta_put(child, &m, META_T_SYS, "kept", 4, "2", 1,
				 "ut"), 0);
	CU_ASSERT_EQUAL(meta_ntxn_commit(child, "ut"), 0);
	CU_ASSERT_EQUAL(meta_wtxn_commit(&m, txn, "ut"), 0);
	CU_ASSERT_EQUAL_FATAL(meta_rtxn_begin(&m, &txn, "ut"), 0);
	CU_ASSERT_EQUAL(meta_get(txn, &m, META_T_SYS, "kept", 4, &r, "ut"), 0);
	CU_ASSERT_EQUAL(meta_get(txn, &m, META_T_SYS, "gone", 4, &r, "ut"),
			-ENOENT);
	meta_rtxn_put(&m, txn);
	meta_close(&m);
}

/* meta_entries(), meta_key_blk(), and a scan resuming after a key (the
 * walks of the unit layouts over table unit). */
static void test_units_resume(void)
{
	const char *dir = ut_tmpdir("meta_units");
	struct st_id a = {3, 1}, b = {3, 2};
	uint8_t kb[META_EXT_KEY_LEN];
	struct meta m;
	struct seen s;
	MDB_txn *txn;
	uint64_t nr = 99;

	CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
	CU_ASSERT_EQUAL_FATAL(meta_open(&m, dir, 16ull << 20, META_CREATE), 0);
	CU_ASSERT_EQUAL_FATAL(meta_rtxn_begin(&m, &txn, "ut"), 0);
	CU_ASSERT_EQUAL(meta_entries(txn, &m, META_T_UNIT, &nr, "ut"), 0);
	CU_ASSERT_EQUAL(nr, 0);
	meta_rtxn_put(&m, txn);
	CU_ASSERT_EQUAL_FATAL(meta_wtxn_begin(&m, &txn, "ut"), 0);
	for (uint64_t i = 1; i <= 4; i++) {
		char c = (char)('0' + i);

		meta_ext_key(kb, i <= 3 ? &a : &b, i << 40 | i);
		CU_ASSERT_EQUAL(meta_key_blk(kb), i << 40 | i);
		CU_ASSERT_EQUAL(meta_put(txn, &m, META_T_UNIT, kb, sizeof kb,
					 &c, 1, "ut"), 0);
	}
	CU_ASSERT_EQUAL(meta_put(txn, &m, META_T_SYS, "x", 1, "", 0, "ut"), 0);
	CU_ASSERT_EQUAL(meta_wtxn_commit(&m, txn, "ut"), 0);

	CU_ASSERT_EQUAL_FATAL(meta_rtxn_begin(&m, &txn, "ut"), 0);
	CU_ASSERT_EQUAL(meta_entries(txn, &m, META_T_UNIT, &nr, "ut"), 0);
	CU_ASSERT_EQUAL(nr, 4);
	CU_ASSERT_EQUAL(meta_entries(txn, &m, META_T_SYS, &nr, NULL), 0);
	CU_ASSERT(nr >= 1);
	/* after key 2 (there): 3 and 4, across objects, to the table's end */
	meta_ext_key(kb, &a, 2ull << 40 | 2);
	s = (struct seen){.s_n = 0};
	CU_ASSERT_EQUAL(meta_scan(txn, &m, &(struct meta_scan){
		.ms_table = META_T_UNIT, .ms_from = kb, .ms_flen = sizeof kb,
		.ms_after = true, .ms_fn = seen_one, .ms_arg = &s,
		.ms_what = "ut"}), 0);
	CU_ASSERT_EQUAL(s.s_n, 2);
	CU_ASSERT_EQUAL(s.s_keys[0], 3);
	CU_ASSERT_EQUAL(s.s_keys[1], 4);
	/* after a key not there: from the next one; without ms_after the
	 * key itself is visited */
	meta_ext_key(kb, &a, 2ull << 40);
	s = (struct seen){.s_n = 0};
	CU_ASSERT_EQUAL(meta_scan(txn, &m, &(struct meta_scan){
		.ms_table = META_T_UNIT, .ms_from = kb, .ms_flen = sizeof kb,
		.ms_after = true, .ms_fn = seen_one, .ms_arg = &s,
		.ms_what = "ut"}), 0);
	CU_ASSERT_EQUAL(s.s_n, 3);
	CU_ASSERT_EQUAL(s.s_keys[0], 2);
	meta_ext_key(kb, &a, 3ull << 40 | 3);
	s = (struct seen){.s_n = 0};
	CU_ASSERT_EQUAL(meta_scan(txn, &m, &(struct meta_scan){
		.ms_table = META_T_UNIT, .ms_from = kb, .ms_flen = sizeof kb,
		.ms_fn = seen_one, .ms_arg = &s, .ms_what = "ut"}), 0);
	CU_ASSERT_EQUAL(s.s_n, 2);
	CU_ASSERT_EQUAL(s.s_keys[0], 3);
	/* after the last key: nothing */
	meta_ext_key(kb, &b, 4ull << 40 | 4);
	s = (struct seen){.s_n = 0};
	CU_ASSERT_EQUAL(meta_scan(txn, &m, &(struct meta_scan){
		.ms_table = META_T_UNIT, .ms_from = kb, .ms_flen = sizeof kb,
		.ms_after = true, .ms_fn = seen_one, .ms_arg = &s,
		.ms_what = "ut"}), 0);
	CU_ASSERT_EQUAL(s.s_n, 0);
	meta_rtxn_put(&m, txn);
	meta_close(&m);
}

/* Members seen by meta_member_scan(), up to sm_max. */
struct members {
	struct st_id sm_ids[8];
	uint32_t sm_n;
	uint32_t sm_max;
};

static int member_one(void *arg, const struct st_id *id)
{
	struct members *ms = arg;

	ms->sm_ids[ms->sm_n++] = *id;
	return ms->sm_n == ms->sm_max ? META_SCAN_STOP : META_SCAN_NEXT;
}

static void test_members(void)
{
	const char *dir = ut_tmpdir("meta_member");
	struct st_id cont = {7, 7}, other = {7, 8};
	struct st_id scont = {7, 7}, after = {1, 1};
	struct members ms;
	uint8_t kb[META_MEMBER_KEY_LEN];
	struct meta m;
	MDB_txn *txn;

	CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
	CU_ASSERT_EQUAL_FATAL(meta_open(&m, dir, 16ull << 20, META_CREATE), 0);
	CU_ASSERT_EQUAL_FATAL(meta_wtxn_begin(&m, &txn, "ut"), 0);
	for (uint64_t i = 1; i <= 3; i++) {
		meta_member_key(kb, &cont, 2, &(struct st_id){1, i});
		CU_ASSERT_EQUAL(meta_put(txn, &m, META_T_MEMBER, kb, sizeof kb,
					 "", 0, "ut"), 0);
	}
	meta_member_key(kb, &cont, 3, &(struct st_id){1, 1});
	CU_ASSERT_EQUAL(meta_put(txn, &m, META_T_MEMBER, kb, sizeof kb, "", 0,
				 "ut"), 0);
	meta_member_key(kb, &other, 2, &(struct st_id){1, 9});
	CU_ASSERT_EQUAL(meta_put(txn, &m, META_T_MEMBER, kb, sizeof kb, "", 0,
				 "ut"), 0);
	CU_ASSERT_EQUAL(meta_wtxn_commit(&m, txn, "ut"), 0);
	CU_ASSERT_EQUAL_FATAL(meta_rtxn_begin(&m, &txn, "ut"), 0);
	ms = (struct members){.sm_max = 8};
	CU_ASSERT_EQUAL(meta_member_scan(txn, &m, &scont, 2, NULL, member_one,
					 &ms, "ut"), 0);
	CU_ASSERT_EQUAL(ms.sm_n, 3);
	CU_ASSERT_EQUAL(ms.sm_ids[0].si_lo, 1);
	CU_ASSERT_EQUAL(ms.sm_ids[2].si_lo, 3);
	ms = (struct members){.sm_max = 8};
	CU_ASSERT_EQUAL(meta_member_scan(txn, &m, &scont, 2, &after,
					 member_one, &ms, "ut"), 0);
	CU_ASSERT_EQUAL(ms.sm_n, 2);
	CU_ASSERT_EQUAL(ms.sm_ids[0].si_lo, 2);
	ms = (struct members){.sm_max = 1};
	CU_ASSERT_EQUAL(meta_member_scan(txn, &m, &scont, 2, NULL, member_one,
					 &ms, "ut"), 0);
	CU_ASSERT_EQUAL(ms.sm_n, 1);
	meta_rtxn_put(&m, txn);
	meta_close(&m);
}

int meta_txn_ut_add(void)
{
	CU_pSuite s = CU_add_suite("meta_txn", NULL, NULL);

	if (s == NULL ||
	    !CU_add_test(s, "records_scans", test_records_scans) ||
	    !CU_add_test(s, "nested", test_nested) ||
	    !CU_add_test(s, "units_resume", test_units_resume) ||
	    !CU_add_test(s, "members", test_members))
		return -1;
	return 0;
}
