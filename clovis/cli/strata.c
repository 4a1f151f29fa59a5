/*
 * strata.c — the strata command-line tool: command table, option parsing,
 * help, and main().
 *
 *   strata [--data DIR] [--json] [-q] [-v] COMMAND ... [OPTIONS]
 *
 * Options may appear anywhere on the line; "--" ends them, so that keys and
 * values starting with '-' can be given.  The command's words are looked up
 * in the table below, its arguments counted and its options checked before
 * the store is opened, so a usage error never touches the store.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "clovis/cli/cli.h"

/* Every command of the tool. */
static const struct cli_cmd cmds[] = {
	{ "cluster", "up", 0, 0, CO_CLUSTER, false, cmd_cluster_up,
	  "[--nodes N] [--dir D] [--base-port P] [--nvram-dir NV] "
	  "[--call-timeout T] [--etcd-members M [--ha-test] | --no-etcd] "
	  "[--device-fill zero|reserve] [--meta-replicas R] [--flash-size S]",
	  "Start a development cluster: write D/cluster.yaml (default D "
	  "./strata-cluster) for N servers (default 3) on 127.0.0.1, ports "
	  "P.. (default 21000), each with emulated devices in D/sI, a fresh "
	  "secret, then start them (strata-server, pid files D/sI.pid, logs "
	  "D/sI.log) and wait until each answers.  --nvram-dir NV: each "
	  "server's NVRAM directory (its NVRAM device; with --meta-nvram its "
	  "metadata) is NV/sI instead of D/sI, e.g. NV on /dev/shm.  "
	  "--call-timeout T: the cluster file's call_timeout (servers and "
	  "clients), e.g. 3s or 500ms, instead of 20s.  An etcd of M members "
	  "(default 1; 1, 3, 5 or 7) is started first for the HA cluster "
	  "map (data, pid files and logs D/etcdJ*; member J's client port "
	  "P+N+2J, its peer port P+N+2J+1) and named in the cluster file "
	  "(cluster.etcd); --no-etcd starts none (no HA).  --ha-test: the "
	  "HA analyzer's test presets and a 3 s lease (cluster.ha_rules: "
	  "test, ha_lease: 3s; docs/ha.md), for tests and demonstrations "
	  "of failover in seconds.  --device-fill: how the servers prepare "
	  "their device files (the cluster file's device_fill): reserve "
	  "(the default here) only allocates them, so the cluster is up in "
	  "seconds; zero also writes zeros over them (about 7 GiB for 3 "
	  "servers, some 20 s), the production format, whose first O_DIRECT "
	  "write + sync of each block is faster (docs/configuration.md): "
	  "use it when measuring write rates.  --meta-replicas R: "
	  "cluster.meta_replicas (copies of each home's metadata, default 3 "
	  "with etcd, 1 with --no-etcd, at most the servers; 1: not "
	  "replicated; with HA a dead server's home is taken over by a "
	  "standby: docs/cluster.md \"Taking over a home\").  "
	  "--flash-size S: the size of each of a server's six flash "
	  "devices (default 96 MiB per server, at most 288 MiB; 4 MiB to "
	  "64 GiB, whole MiB), e.g. small to fill the flash tier in a "
	  "test of tier watermarks." },
	{ "cluster", "down", 0, 0, CO_CLUSTER, false, cmd_cluster_down,
	  "[--dir D]",
	  "Stop the servers of the cluster in D by the pids they recorded: "
	  "SIGTERM to all of them at once (each drains and closes its "
	  "store), then SIGKILL to those still there after 15 seconds; then "
	  "its etcd members the same way (10 seconds)." },
	{ "cluster", "status", 0, 0, CO_CLUSTER, false, cmd_cluster_status,
	  "[--dir D | --cluster FILE | --server ADDR:PORT]",
	  "Show each server (up or down, uptime, requests served, malformed "
	  "requests refused), then the devices, tiers and free space of the "
	  "servers that answered; with --json as one JSON object." },
	{ "dtx", "ls", 0, 0, CO_CLUSTER, false, cmd_dtx_ls,
	  "[--dir D | --cluster FILE | --server ADDR:PORT]",
	  "Show the distributed transactions each server of the cluster "
	  "knows, newest first: id, state (PREPARED = in doubt, COMMITTED, "
	  "ABORTED), participants, age; in-doubt count at the end." },
	{ "dtx", "resolve", 2, 2, CO_CLUSTER, false, cmd_dtx_resolve,
	  "dead|alive SERVER [--dir D | --cluster FILE | --server ADDR:PORT]",
	  "Mark SERVER gone for good (dead) or back (alive) on every other "
	  "server: a dtx in doubt with a dead participant then commits only "
	  "if a live participant holds it COMMITTED, else aborts "
	  "(dtm/README.md)." },
	{ "ha", "state", 0, 1, CO_CLUSTER, false, cmd_ha_show,
	  "[SERVER] [--dir D | --cluster FILE | --server ADDR:PORT]",
	  "HA (docs/ha.md): a server's agent as JSON (SERVER's, else the "
	  "first that answers): its map epoch, whether it is fenced, its "
	  "lease, the analyzer's leader." },
	{ "ha", "map", 0, 0, CO_CLUSTER, false, cmd_ha_show,
	  "[--dir D | --cluster FILE | --server ADDR:PORT]",
	  "HA: the cluster map as JSON (epoch, servers and devices with "
	  "their states, placement groups, tolerance, frozen)." },
	{ "ha", "events", 0, 1, CO_CLUSTER, false, cmd_ha_show,
	  "[FROM] [--json] [--dir D | --cluster FILE | --server ADDR:PORT]",
	  "HA: the events servers and operators reported (kept: the last "
	  "HA_HISTORY_MAX), from sequence FROM: seq, time, kind, reporter, "
	  "target; with --json one JSON object per line." },
	{ "ha", "decisions", 0, 1, CO_CLUSTER, false, cmd_ha_show,
	  "[FROM] [--json] [--dir D | --cluster FILE | --server ADDR:PORT]",
	  "HA: the analyzer's decisions, from sequence FROM: time, rule, "
	  "kind, target, state, reason; with --json one JSON object per "
	  "line." },
	{ "ha", "report", 2, 2, CO_CLUSTER, false, cmd_ha_report,
	  "fail|replace|drain|remove|add|thaw SERVER[/DEVICE] "
	  "[--dir D | --cluster FILE | --server ADDR:PORT]",
	  "HA: report an operator's request as an event; the analyzer "
	  "decides (thaw unfreezes a frozen map; fail marks a target failed; "
	  "replace starts a rebalance onto a replaced device)." },
	{ "server", "drain", 1, 1, CO_CLUSTER, false, cmd_server,
	  "NAME [--dir D | --cluster FILE | --server ADDR:PORT]",
	  "HA: take server NAME out of service: the analyzer makes it OUT "
	  "at once, its home moves to a standby, and a repair job rebuilds "
	  "its units elsewhere (its state REPAIRING, then REPAIRED; cluster "
	  "status shows the job); it stays out until `server add NAME`." },
	{ "server", "remove", 1, 1, CO_CLUSTER, false, cmd_server,
	  "NAME [--dir D | --cluster FILE | --server ADDR:PORT]",
	  "HA: as drain for a server not REPAIRED yet; of a REPAIRED server "
	  "the analyzer decides nothing more (it stays out of service)." },
	{ "server", "add", 1, 1, CO_CLUSTER, false, cmd_server,
	  "NAME [--dir D | --cluster FILE | --server ADDR:PORT]",
	  "HA: take server NAME of the cluster file back into service: a "
	  "drained (REPAIRED) server gets a rebalance job that moves its "
	  "units back, and its home is handed back.  A new server "
	  "(ADDR:PORT, not in the cluster file) is refused: it cannot join "
	  "a cluster yet, and the servers refuse a cluster file whose list "
	  "changed." },
	{ "ha", "replay", 1, 1, 0, false, cmd_ha_replay, "FILE|- [--json]",
	  "Run the HA event analyzer over a recorded history FILE (JSON "
	  "lines: an optional first line {\"map\": ..., \"rules\": ...}, "
	  "then one event per line; ha/README.md) as the live analyzer "
	  "runs, at each event and at each rule deadline between, and print "
	  "its decisions: time, rule, kind, target, state, reason (with "
	  "--json one JSON object per line).  No store is opened." },
	{ "s3", "user", 1, 3, 0, false, cmd_s3_user, "add NAME [FILE] | ls [FILE] | rm NAME [FILE]", "Manage the users of the S3 gateway (strata-s3) in its credentials file FILE (default $STRATA_S3_CREDS, else ./s3-credentials): add makes a user with fresh access and secret keys and prints them, ls lists names and access keys, rm removes a user.  The running gateway re-reads the file when it changes." },
	{ "obj", "create", 1, 1, CO_BLOCK | CO_TIER | CO_LAYOUT, true,
	  cmd_obj_create,
	  "ID [--block-size BYTES] [--tier T | --layout L [--pool NAME] "
	  "[--data N] [--parity K] [--copies N] [--spare S] [--unit SIZE]]",
	  "Create an empty object with the given block size (default 4K).  "
	  "Its layout is plain on the --tier given, or --layout pdclust (N "
	  "data + K parity + S spare units per group over the devices of a "
	  "pool) or mirror (N copies and S spares over a pool), or --layout "
	  "composite: layers of their own, here one plain layer on --tier "
	  "(default flash) that writes go to, which strata-hsm moves "
	  "between tiers (fdmi/hsm/README.md); without any, the "
	  "container's default layout from the store configuration (plain "
	  "on flash unless configured).  In a cluster a composite "
	  "object's layers live on its home server." },
	{ "obj", "write", 3, 3, 0, true, cmd_obj_write,
	  "ID START_BLOCK FILE|-",
	  "Write the bytes of FILE (or standard input) into the object from "
	  "block START_BLOCK on; the last partial block is padded with zeros." },
	{ "obj", "read", 3, 4, 0, true, cmd_obj_read,
	  "ID START_BLOCK NR_BLOCKS [FILE|-]",
	  "Read NR_BLOCKS whole blocks from START_BLOCK into FILE (default: "
	  "standard output).  Unwritten blocks read as zeros." },
	{ "obj", "put", 2, 2, CO_BLOCK | CO_TIER | CO_LAYOUT, true,
	  cmd_obj_put,
	  "ID FILE|- [--block-size BYTES] [--tier T | --layout L [--pool "
	  "NAME] [--data N] [--parity K] [--copies N] [--spare S] [--unit "
	  "SIZE]]",
	  "Create an object (layout options as for 'obj create') and store "
	  "the whole of FILE in it, 1 MiB per op with several ops in flight, "
	  "then record the file's byte size.  A failed put leaves no object "
	  "behind." },
	{ "obj", "get", 2, 2, 0, true, cmd_obj_get, "ID FILE|-",
	  "Read a whole object into FILE, cut to its recorded byte size." },
	{ "obj", "stat", 1, 1, 0, true, cmd_obj_stat, "ID",
	  "Show an object's attributes: block size, layout (plain: tier and "
	  "device; pdclust: N+K+S, unit size and pool; mirror: copies, "
	  "spares, unit size and pool; composite: each layer with its "
	  "priority, sub-layout and the blocks it holds), size in blocks "
	  "and bytes, creation and change times." },
	{ "obj", "rm", 1, 1, 0, true, cmd_obj_rm, "ID",
	  "Delete an object and all its data." },
	{ "obj", "layers", 1, 1, 0, true, cmd_obj_layers, "ID",
	  "List the layers of a composite object, highest priority (the one "
	  "writes go to) first: layer id, priority, sub-layout and the "
	  "blocks it holds now; then where its blocks are, in block order: "
	  "each run of blocks on one layer, with that layer's tier (or "
	  "pdclust, mirror); holes left out (JSON: \"runs\")." },
	{ "obj", "move", 1, 1, CO_MOVE, true, cmd_obj_move,
	  "ID --to TIER [--range A:B]",
	  "Move the blocks of a composite object (all, or blocks A to B-1) "
	  "to a plain layer on TIER: the top layer if it is on TIER; moving "
	  "up (TIER faster than the top layer's) a new layer above the top, "
	  "so that later writes land there too; else an existing plain "
	  "layer on TIER or a new one below every other.  Each run is read, "
	  "written and remapped in one commit (a crash leaves every block "
	  "readable from one layer or the other); a block written meanwhile "
	  "keeps the newer data and stays where it is (reported).  Layers "
	  "left empty, other than the top, are dropped." },
	{ "obj", "ls", 0, 0, 0, true, cmd_obj_ls, "",
	  "List the ids of all objects in the default container." },
	{ "idx", "create", 1, 1, 0, true, cmd_idx_create, "ID",
	  "Create an empty index." },
	{ "idx", "put", 3, CLI_POS_MAX, CO_OVERWRITE | CO_HEX | CO_RECORDS,
	  true, cmd_idx_put,
	  "ID KEY VALUE [KEY VALUE ...] [--overwrite] [--hex]",
	  "Store records, one op each, in the order given (at most 512).  An "
	  "existing key is an error unless --overwrite is given.  Keys are at "
	  "most 495 bytes, values at most 1 MiB; in a list of several records "
	  "no key may be empty.  Bad input (a key without its value, bad hex, "
	  "a key or value too long) is refused before anything is stored.  "
	  "The first record that fails stops the command (exit 1, its key "
	  "named); the records before it stay stored." },
	{ "idx", "get", 2, 2, CO_HEX, true, cmd_idx_get, "ID KEY [--hex]",
	  "Print the value stored under KEY." },
	{ "idx", "del", 2, CLI_POS_MAX, CO_HEX | CO_RECORDS, true,
	  cmd_idx_del, "ID KEY [KEY ...] [--hex]",
	  "Delete the records of the KEYs, one op each, in the order given (at "
	  "most 512; in a list of several no key may be empty).  The first "
	  "key that fails (no such key) stops the command (exit 1, the key "
	  "named); the records deleted before it stay deleted." },
	{ "idx", "next", 1, 2, CO_COUNT | CO_EXCLUDE | CO_HEX, true,
	  cmd_idx_next,
	  "ID [START_KEY] [--count N] [--exclude-start] [--hex]",
	  "Print up to N records (default 10) in key order from the first key "
	  ">= START_KEY (> with --exclude-start; from the first record when "
	  "START_KEY is left out), as KEY<TAB>VALUE lines.  Finding no record "
	  "is an error." },
	{ "idx", "dump", 1, 1, CO_HEX, true, cmd_idx_dump, "ID [--hex]",
	  "Print every record in key order, as KEY<TAB>VALUE lines." },
	{ "idx", "rm", 1, 1, 0, true, cmd_idx_rm, "ID",
	  "Delete an index and all its records." },
	{ "idx", "ls", 0, 0, 0, true, cmd_idx_ls, "",
	  "List the ids of all indices in the default container." },
	{ "addb", "trace", 2, 4, 0, false, cmd_addb_trace,
	  "PID on [N [MIB]] | PID off",
	  "Switch the ADDB trace of running Strata process PID through its "
	  "metrics region: on traces one op in N (default 1) into a ring "
	  "file /dev/shm/strata-addb.PID.trace of at most MIB MiB (default "
	  "64; its size is fixed when the process first makes it), off "
	  "stops it.  The process sees the switch at its next op." },
	{ "addb", "dump", 1, 1, 0, false, cmd_addb_dump, "PID|FILE [--json]",
	  "Decode the ADDB trace of process PID (or trace file FILE): one "
	  "line per record in time order: time (s since the first record), "
	  "ring (thread), kind (op.launch, op.executed, op.end, srv.recv, "
	  "srv.reply, dev.io, commit), op id, class, result, bytes, latency; "
	  "with --json one object per line." },
	{ "addb", "records", 1, 1, CO_COUNT, true, cmd_addb_records,
	  "NAME [--count N] (--cluster FILE | --server ADDR:PORT)",
	  "The last N (default and at most 10000) ADDB trace records of "
	  "cluster server NAME's process, as JSON lines (the format of "
	  "'addb dump --json'); its trace must have been switched on "
	  "('addb trace' on its host)." },
	{ "addb", "top", 1, 1, CO_COUNT, false, cmd_addb_top,
	  "PID [--count N]",
	  "Live view of process PID from its metrics region, once a second "
	  "(N times, default until interrupted): the busiest op classes "
	  "(ops/s, mean latency) and devices (requests/s, MB/s)." },
	{ "metrics", "server", 1, 1, CO_METRICS, true, cmd_metrics_server,
	  "NAME [--min-priority P] [--json] (--cluster FILE | --server "
	  "ADDR:PORT)",
	  "Print the metrics of cluster server NAME's process (its "
	  "SOP_METRICS answer): Prometheus text, or JSON with --json; only "
	  "the families of priority >= P (10 critical, 5 useful, 0 all; "
	  "docs/monitoring.md)." },
	{ "metrics", "cluster", 0, 0, CO_METRICS, true, cmd_metrics_cluster,
	  "[--min-priority P] [--json] (--cluster FILE | --server "
	  "ADDR:PORT)",
	  "Print every server's metrics in one exposition: counters and "
	  "histograms summed over the servers (same family, same labels), "
	  "each gauge per server with the label server=\"NAME\"; then "
	  "strata_cluster_servers_read and _not_read (a server that does "
	  "not answer is left out).  Prometheus text, or JSON with --json; "
	  "only the families of priority >= P." },
	{ "metrics", NULL, 0, 0, CO_METRICS, false, cmd_metrics,
	  "[--pid P | --file F] [--min-priority P] [--json] | --sweep",
	  "Print the metrics of the running (or killed) Strata process P "
	  "from its shared-memory region /dev/shm/strata-addb.P (or the "
	  "region file F) without stopping it: Prometheus text, or JSON "
	  "with --json.  Without --pid or --file, list the regions there "
	  "are: pid, process kind, running or not.  --sweep removes the "
	  "regions of processes that no longer run.  No store is opened." },
	{ "stats", NULL, 0, 0, CO_RESET, true, cmd_stats, "[--reset]",
	  "Show per-op counts and latency percentiles (launch to stable) "
	  "accumulated over every session of the store; --reset clears them." },
	{ "devices", NULL, 0, 0, 0, true, cmd_devices, "",
	  "List the store's devices: index, name, tier, driver, size, free "
	  "space, state (online, failed, repaired), I/O errors since the "
	  "store was opened, whether units wait to be moved back (rebal), "
	  "whether the device model is on, direct I/O, for SMR devices the "
	  "zone size, zones and empty zones, and the path.  A device is named "
	  "after its file (flash3, smr0); commands take a name or an index." },
	{ "tiers", NULL, 0, 0, 0, true, cmd_tiers, "",
	  "For each tier (nvram, flash, sas, smr): its devices, how many of "
	  "them are not online, their total size and free space." },
	{ "pools", NULL, 0, 0, 0, true, cmd_pools, "",
	  "List the store's pools (the device groups that pdclust and mirror "
	  "objects place units over): index, name, devices, total size, free "
	  "space and members as NAME(INDEX)." },
	{ "device", "fail", 1, 1, 0, true, cmd_dev_fail, "DEV",
	  "Mark device DEV (an index or a name from 'strata devices') failed, "
	  "as if it had stopped answering.  Its units are then read degraded "
	  "(rebuilt from the rest of their groups) until 'strata repair' "
	  "rebuilds them elsewhere.  Kept across restarts.  In cluster mode "
	  "DEV is SERVER:NAME or SERVER:INDEX (as 'strata devices' names "
	  "them, e.g. s1:flash2), or the cluster-wide index: the server "
	  "fails its device and every other server its image of it." },
	{ "device", "replace", 2, 2, 0, true, cmd_dev_replace,
	  "DEV NEWPATH",
	  "Replace failed and repaired device DEV by a new empty device made "
	  "at NEWPATH (which must not exist), of the same tier and size.  "
	  "'strata rebalance' then moves its units back onto it.  In cluster "
	  "mode DEV is named as for 'device fail', NEWPATH is on that "
	  "server's host (relative: from its data directory), and every "
	  "server's image of the device must be repaired first." },
	{ "repair", NULL, 0, 0, 0, true, cmd_repair, "",
	  "Rebuild every unit on a failed device from the rest of its group "
	  "onto spare space of the pool's other devices, then mark the "
	  "failed devices repaired.  Shows progress on a terminal and prints "
	  "a summary.  Interrupted (Ctrl-C, a crash), the next run resumes." },
	{ "rebalance", NULL, 0, 0, 0, true, cmd_rebalance, "",
	  "Move units back onto replaced devices, checking each one.  "
	  "Resumable like repair." },
	{ "scrub", NULL, 0, 0, 0, true, cmd_scrub, "",
	  "Read every unit on the online devices, verify its checksum, and "
	  "rebuild and rewrite each damaged one.  Resumable like repair." },
	{ "smr", "clean", 0, 1, CO_LIVE, true, cmd_smr_clean,
	  "[DEV] [--live PCT]",
	  "Reclaim SMR zones: in each full zone of DEV (default every SMR "
	  "device) whose live data is at most PCT % (default 25) of what was "
	  "written in it, move the live data to other zones and reset the "
	  "zone." },
	{ "fdmi", "sub", 1, CLI_POS_MAX, CO_FDMI_SUB, true, cmd_fdmi_sub,
	  "NAME [FILTER...] [--max-bytes N] [--max-age SECS] [--from-start]",
	  "FDMI: register consumer NAME of the record of every change "
	  "(clovis_fdmi_sub(); in cluster mode on every server).  The "
	  "FILTER words, joined with spaces, say which records it receives: "
	  "op=OP[,OP...] (obj.create, obj.write, idx.put, ...), "
	  "container=ID, id=ID[/BITS] (an entity or an id prefix), "
	  "key=PREFIX (index records whose key starts with it), tier=N; "
	  "none: every record.  --max-bytes and --max-age bound the records "
	  "it has not acked (default 64M, 3600 s): past either it is marked "
	  "LAGGING and its records dropped.  It receives the records after "
	  "now, or with --from-start every record still kept.  The same "
	  "NAME with the same filter again changes nothing; with another "
	  "filter it is an error." },
	{ "fdmi", "ls", 0, 0, 0, true, cmd_fdmi_ls, "[--json]",
	  "FDMI: every consumer (per server in cluster mode): name, server, "
	  "state (ACTIVE or LAGGING), acked sequence number, lag (records "
	  "not acked, their bytes, the age of the oldest), times marked "
	  "LAGGING, bounds and filter; --json: an array of objects." },
	{ "fdmi", "rm", 1, 1, 0, true, cmd_fdmi_rm, "NAME",
	  "FDMI: remove consumer NAME (in cluster mode on every server); "
	  "the records only it held are trimmed." },
	{ "fdmi", "tail", 1, 1, CO_COUNT | CO_FDMI_TAIL, true, cmd_fdmi_tail,
	  "NAME [--count N] [--follow] [--no-ack] [--json]",
	  "FDMI: print consumer NAME's records, one line each: server, "
	  "sequence number, commit time (UTC), op, entity id, container, "
	  "then the extents (START+BLOCKS,...) or the key (as text when "
	  "printable, else 0x and hex), the size after the change, the dtx "
	  "id if any; --json: one JSON object per line.  Each batch read is "
	  "acked (released for good) unless --no-ack, which leaves them to "
	  "be read again.  Stops after N records, or when none is left; "
	  "with --follow it waits for more (polling every 200 ms) until N "
	  "records or SIGINT/SIGTERM.  A LAGGING consumer fails: rescan, "
	  "then 'fdmi reset'." },
	{ "fdmi", "reset", 1, 1, 0, true, cmd_fdmi_reset, "NAME",
	  "FDMI: make LAGGING consumer NAME ACTIVE again, reading from the "
	  "newest record on (after the application rescanned the store)." },
	{ "destroy", NULL, 0, 0, CO_YES, false, cmd_destroy, "--yes",
	  "Remove the store in the data directory with all its data and "
	  "devices, including the NVRAM device kept outside it (under "
	  "/dev/shm).  The store must not be open elsewhere." },
	{ "isc", "register", 1, 1, CO_ISC_REG, false, cmd_isc_register,
	  "NAME (--decl FILE | --lua FILE | --native PATH)",
	  "Function shipping (docs/isc.md): store the code of FILE ('-': "
	  "standard input) under NAME (letters, digits, '_', '.', '-'), as "
	  "a declarative program (--decl), a Lua 5.4 script (--lua) or a "
	  "trusted native shared object (--native: its absolute path is "
	  "the code; each server loads it only when its configuration "
	  "lists it, cluster key isc_native; an embedded store only when "
	  "STRATA_ISC_NATIVE lists it, paths separated by ':').  The code "
	  "is checked first "
	  "(a syntax error names its line).  Prints the function's digest "
	  "(SHA-256 of kind and code, 64 hex digits); the name now means "
	  "this code, code it meant before stays under its digest." },
	{ "isc", "unregister", 1, 1, 0, false, cmd_isc_unregister, "NAME",
	  "Function shipping: forget the name NAME (its code stays in the "
	  "registry under its digest)." },
	{ "isc", "list", 0, 0, 0, false, cmd_isc_list, "[--json]",
	  "Function shipping: every registered name in order, with its kind "
	  "(decl, lua, native) and digest, one per line." },
	{ "isc", "show", 1, 1, 0, false, cmd_isc_show, "NAME [--json]",
	  "Function shipping: the kind, digest and code of function NAME "
	  "(of a native one: its shared object's path)." },
	{ "isc", "call", 1, 1, CO_ISC_CALL | CO_HEX, false, cmd_isc_call,
	  "NAME (--obj ID [--start B] [--blocks N] | --idx ID [--from KEY] "
	  "[--to KEY] | --container ID) [--args STR] [--deadline MS] "
	  "[--mem BYTES] [--out-max BYTES] [--hex] [--json]",
	  "Function shipping: run function NAME where the data lives: on "
	  "the units of object ID (blocks B to B+N-1; default all), the "
	  "records of index ID (keys from KEY to before KEY; default all) "
	  "or every object and index of container ID (0:1 is the default "
	  "container); each server maps what it holds and the results are "
	  "merged here.  Prints one line per result record, "
	  "KEY<TAB>TYPE<TAB>VALUE (keys as text when printable, else 0x "
	  "and hex; a container member's records start with its id, "
	  "HI:LO:; a histogram as lo,hi,count,count,...), then a line of "
	  "figures on standard error: runs, servers, bytes mapped, bytes "
	  "of result, degraded units.  --args: the bytes given to the "
	  "function (Lua: ARGS); --deadline: the function's own time per "
	  "run in ms, reads not counted (default 1000); "
	  "--mem: a Lua run's memory cap (default 8M); --out-max: the cap "
	  "on each run's and the merged output (default 1M).  A function "
	  "that fails, times out, runs out of memory or writes too much "
	  "fails the call with a message naming it, the server and the "
	  "reason." },
	{ "h5", "import", 2, 2, CO_TIER, false, cmd_h5_import,
	  "FILE.h5 CONTAINER[/NAME] [--tier T]",
	  "Import an HDF5 file as NAME (default: the file's name) in "
	  "container CONTAINER (an id: @name, HI:LO, or default; made when "
	  "missing): each group an index of its links and attributes, each "
	  "dataset an index of its metadata and an object of its data "
	  "(contiguous: the array's bytes in row-major order; chunked: each "
	  "chunk decompressed, one extent at chunk index x chunk slot, the "
	  "block size fitted to the chunk), on tier T (default flash).  The "
	  "whole file is checked first: an unsupported feature (external "
	  "link, reference, variable-length sequence, committed datatype, a "
	  "filter HDF5 cannot apply again) is refused naming its HDF5 path, "
	  "and nothing is stored; a name that exists is refused; a failure "
	  "midway removes what was made (docs/hdf5.md)." },
	{ "h5", "export", 2, 2, 0, false, cmd_h5_export,
	  "CONTAINER[/NAME] OUT.h5",
	  "Make the HDF5 file OUT.h5 (which must not exist) from an import: "
	  "groups, datasets with their layout, chunking, filters (applied "
	  "again) and fill values, attributes, hard and soft links; the data "
	  "byte for byte.  NAME may be left out when the container holds "
	  "one file.  On failure OUT.h5 is removed." },
	{ "h5", "ls", 1, 1, 0, false, cmd_h5_ls, "CONTAINER[/NAME]",
	  "Without NAME: the HDF5 files imported in CONTAINER (name, state, "
	  "groups, datasets, bytes, time, root index, source file).  With "
	  "NAME: its mapping, one line per HDF5 path: group (its index), "
	  "dataset (its index and object, layout, block size, chunk dims, "
	  "chunks stored of the grid, filters), soft and further hard "
	  "links." },
	{ "h5", "rm", 1, 1, 0, false, cmd_h5_rm, "CONTAINER/NAME",
	  "Remove an imported HDF5 file: every index and object of its "
	  "mapping, then its catalogue record (also the remains of an "
	  "interrupted import)." },
	{ "bench", NULL, 0, 0, CO_OPS | CO_BLOCK, true, cmd_bench,
	  "[--ops N] [--block-size BYTES]",
	  "Time single-block writes and reads (4K and 1M blocks, or the "
	  "given size; at most 64 MiB per size) and index puts and gets "
	  "(N each, default 5000) with 16 ops in flight, check what was "
	  "read, and print ops/s and MiB/s.  Scratch entities are removed." },
};

#define NR_CMDS (sizeof cmds / sizeof cmds[0])

/* Every option; global ones have no CO_* bit. */
enum opt_id {
	O_DATA, O_JSON, O_QUIET, O_VERBOSE, O_HELP, O_DEV_SIZE, O_CONFIG,
	O_MODEL, O_HEX, O_OVERWRITE, O_EXCLUDE, O_RESET, O_BLOCK_SIZE,
	O_BLOCK_SHIFT, O_TIER, O_COUNT, O_OPS, O_YES, O_LAYOUT, O_POOL,
	O_DATA_UNITS, O_PARITY, O_SPARE, O_COPIES, O_UNIT, O_LIVE,
	O_CLUSTER, O_SERVER, O_NODES, O_DIR, O_BASE_PORT, O_META_NVRAM,
	O_NVRAM_DIR, O_CALL_TIMEOUT, O_ETCD_MEMBERS, O_NO_ETCD, O_HA_TEST,
	O_DEV_FILL, O_META_REPLICAS, O_PID, O_FILE, O_MIN_PRIO, O_SWEEP,
	O_MAX_BYTES, O_MAX_AGE, O_FROM_START, O_FOLLOW, O_NO_ACK, O_TO,
	O_RANGE, O_FLASH_SIZE, O_DECL, O_LUA, O_NATIVE, O_OBJ, O_IDX,
	O_CONTAINER, O_START, O_BLOCKS, O_FROM, O_ARGS, O_DEADLINE, O_MEM,
	O_OUT_MAX, O_NR
};

/* One option: its names, its command bit, whether it takes a value. */
struct opt_def {
	const char *od_long;
	char od_short;
	uint32_t od_bit;
	bool od_arg;
};

static const struct opt_def opt_defs[O_NR] = {
	[O_DATA] = { "data", 0, 0, true },
	[O_JSON] = { "json", 0, 0, false },
	[O_QUIET] = { "quiet", 'q', 0, false },
	[O_VERBOSE] = { "verbose", 'v', 0, false },
	[O_HELP] = { "help", 'h', 0, false },
	[O_DEV_SIZE] = { "dev-size", 0, 0, true },
	[O_CONFIG] = { "config", 0, 0, true },
	[O_MODEL] = { "model", 0, 0, false },
	[O_HEX] = { "hex", 0, CO_HEX, false },
	[O_OVERWRITE] = { "overwrite", 0, CO_OVERWRITE, false },
	[O_EXCLUDE] = { "exclude-start", 0, CO_EXCLUDE, false },
	[O_RESET] = { "reset", 0, CO_RESET, false },
	[O_BLOCK_SIZE] = { "block-size", 0, CO_BLOCK, true },
	[O_BLOCK_SHIFT] = { "block-shift", 0, CO_BLOCK, true },
	[O_TIER] = { "tier", 0, CO_TIER, true },
	[O_COUNT] = { "count", 0, CO_COUNT, true },
	[O_OPS] = { "ops", 0, CO_OPS, true },
	[O_YES] = { "yes", 0, CO_YES, false },
	[O_LAYOUT] = { "layout", 0, CO_LAYOUT, true },
	[O_POOL] = { "pool", 0, CO_LAYOUT, true },
	/* "--data" after the words of a command taking CO_LAYOUT (see
	 * data_is_units()); never found by its name. */
	[O_DATA_UNITS] = { "data", 0, CO_LAYOUT, true },
	[O_PARITY] = { "parity", 0, CO_LAYOUT, true },
	[O_SPARE] = { "spare", 0, CO_LAYOUT, true },
	[O_COPIES] = { "copies", 0, CO_LAYOUT, true },
	[O_UNIT] = { "unit", 0, CO_LAYOUT, true },
	[O_LIVE] = { "live", 0, CO_LIVE, true },
	[O_CLUSTER] = { "cluster", 0, 0, true },
	[O_SERVER] = { "server", 0, 0, true },
	[O_NODES] = { "nodes", 0, CO_CLUSTER, true },
	[O_DIR] = { "dir", 0, CO_CLUSTER, true },
	[O_BASE_PORT] = { "base-port", 0, CO_CLUSTER, true },
	[O_META_NVRAM] = { "meta-nvram", 0, 0, false },
	[O_NVRAM_DIR] = { "nvram-dir", 0, CO_CLUSTER, true },
	[O_CALL_TIMEOUT] = { "call-timeout", 0, CO_CLUSTER, true },
	[O_ETCD_MEMBERS] = { "etcd-members", 0, CO_CLUSTER, true },
	[O_NO_ETCD] = { "no-etcd", 0, CO_CLUSTER, false },
	[O_HA_TEST] = { "ha-test", 0, CO_CLUSTER, false },
	[O_DEV_FILL] = { "device-fill", 0, CO_CLUSTER, true },
	[O_META_REPLICAS] = { "meta-replicas", 0, CO_CLUSTER, true },
	[O_FLASH_SIZE] = { "flash-size", 0, CO_CLUSTER, true },
	[O_PID] = { "pid", 0, CO_METRICS, true },
	[O_FILE] = { "file", 0, CO_METRICS, true },
	[O_MIN_PRIO] = { "min-priority", 0, CO_METRICS, true },
	[O_SWEEP] = { "sweep", 0, CO_METRICS, false },
	[O_MAX_BYTES] = { "max-bytes", 0, CO_FDMI_SUB, true },
	[O_MAX_AGE] = { "max-age", 0, CO_FDMI_SUB, true },
	[O_FROM_START] = { "from-start", 0, CO_FDMI_SUB, false },
	[O_FOLLOW] = { "follow", 0, CO_FDMI_TAIL, false },
	[O_NO_ACK] = { "no-ack", 0, CO_FDMI_TAIL, false },
	/* obj move: a tier; isc call: the end of a key range */
	[O_TO] = { "to", 0, CO_MOVE | CO_ISC_CALL, true },
	[O_RANGE] = { "range", 0, CO_MOVE, true },
	[O_DECL] = { "decl", 0, CO_ISC_REG, true },
	[O_LUA] = { "lua", 0, CO_ISC_REG, true },
	[O_NATIVE] = { "native", 0, CO_ISC_REG, true },
	[O_OBJ] = { "obj", 0, CO_ISC_CALL, true },
	[O_IDX] = { "idx", 0, CO_ISC_CALL, true },
	[O_CONTAINER] = { "container", 0, CO_ISC_CALL, true },
	[O_START] = { "start", 0, CO_ISC_CALL, true },
	[O_BLOCKS] = { "blocks", 0, CO_ISC_CALL, true },
	[O_FROM] = { "from", 0, CO_ISC_CALL, true },
	[O_ARGS] = { "args", 0, CO_ISC_CALL, true },
	[O_DEADLINE] = { "deadline", 0, CO_ISC_CALL, true },
	[O_MEM] = { "mem", 0, CO_ISC_CALL, true },
	[O_OUT_MAX] = { "out-max", 0, CO_ISC_CALL, true },
};

/* The raw command line: option values as typed, and the positionals. */
struct raw {
	bool r_set[O_NR];
	const char *r_val[O_NR];
	int r_verbose;
	int r_npos;
	const char *r_pos[CLI_POS_MAX + 2];
};

static const struct cli_cmd *cmd_find(const struct raw *r, int *words);

/* Look up a long option name (up to len chars); O_NR if unknown. */
static int opt_long(const char *name, size_t len)
{
	int i;

	for (i = 0; i < O_NR; i++)
		if (strlen(opt_defs[i].od_long) == len &&
		    strncmp(opt_defs[i].od_long, name, len) == 0)
			return i;
	return O_NR;
}

/* Look up a one-letter option; O_NR if unknown. */
static int opt_short(char ch)
{
	int i;

	for (i = 0; i < O_NR; i++)
		if (opt_defs[i].od_short == ch)
			return i;
	return O_NR;
}

/* Record option id with value val (NULL for flags). */
static void raw_set(struct raw *r, int id, const char *val)
{
	r->r_set[id] = true;
	r->r_val[id] = val;
	if (id == O_VERBOSE)
		r->r_verbose++;
}

/*
 * Is "--data" here the number of data units?  It is once the words of a
 * command that takes layout options (obj create, obj put) have been seen;
 * before them it is the global store directory.
 */
static bool data_is_units(const struct raw *r)
{
	const struct cli_cmd *k;
	int words = 0;

	if (r->r_npos == 0)
		return false;
	k = cmd_find(r, &words);
	return k != NULL && (k->cc_opts & CO_LAYOUT) != 0;
}

/* Parse "--name[=value]" at argv[*i]; may consume the next argument. */
static int parse_long(struct cli *c, struct raw *r, int argc, char **argv,
		      int *i)
{
	const char *arg = argv[*i] + 2, *eq = strchr(arg, '=');
	size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
	const char *val = eq ? eq + 1 : NULL;
	int id = opt_long(arg, len);

	if (id == O_NR)
		return cli_usage(c, "unknown option '%s'", argv[*i]);
	if (id == O_DATA && data_is_units(r))
		id = O_DATA_UNITS;
	if (!opt_defs[id].od_arg && val != NULL)
		return cli_usage(c, "option --%s takes no value",
				 opt_defs[id].od_long);
	if (opt_defs[id].od_arg && val == NULL) {
		if (*i + 1 >= argc)
			return cli_usage(c, "option --%s needs a value",
					 opt_defs[id].od_long);
		val = argv[++*i];
	}
	raw_set(r, id, val);
	return 0;
}

/* Parse a cluster of one-letter flags such as "-qv". */
static int parse_short(struct cli *c, struct raw *r, const char *arg)
{
	const char *p;

	for (p = arg + 1; *p != '\0'; p++) {
		int id = opt_short(*p);

		if (id == O_NR)
			return cli_usage(c, "unknown option '-%c'", *p);
		raw_set(r, id, NULL);
	}
	return 0;
}

/* Add a positional argument. */
static int parse_pos(struct cli *c, struct raw *r, const char *arg)
{
	if (r->r_npos >= CLI_POS_MAX + 2)
		return cli_usage(c, "too many arguments");
	r->r_pos[r->r_npos++] = arg;
	return 0;
}

/* Split the command line into options and positional arguments. */
static int parse_argv(struct cli *c, struct raw *r, int argc, char **argv)
{
	bool opts = true;
	int i, rc = 0;

	for (i = 1; i < argc && rc == 0; i++) {
		const char *a = argv[i];

		if (opts && strcmp(a, "--") == 0)
			opts = false;
		else if (opts && strncmp(a, "--", 2) == 0)
			rc = parse_long(c, r, argc, argv, &i);
		else if (opts && a[0] == '-' && a[1] != '\0')
			rc = parse_short(c, r, a);
		else
			rc = parse_pos(c, r, a);
	}
	return rc;
}

/* Find the command named by the first positionals; sets *words used. */
static const struct cli_cmd *cmd_find(const struct raw *r, int *words)
{
	size_t i;

	for (i = 0; i < NR_CMDS; i++) {
		const struct cli_cmd *k = &cmds[i];

		if (strcmp(k->cc_group, r->r_pos[0]) != 0)
			continue;
		if (k->cc_name == NULL) {
			*words = 1;
			return k;
		}
		if (r->r_npos > 1 && strcmp(k->cc_name, r->r_pos[1]) == 0) {
			*words = 2;
			return k;
		}
	}
	return NULL;
}

/* True when name is a group of several commands ("obj", "idx"). */
static bool is_group(const char *name)
{
	size_t i;

	for (i = 0; i < NR_CMDS; i++)
		if (cmds[i].cc_name != NULL &&
		    strcmp(cmds[i].cc_group, name) == 0)
			return true;
	return false;
}

/* Print the usage line of one command. */
static void usage_line(FILE *f, const struct cli_cmd *k)
{
	fprintf(f, "  strata %s%s%s%s%s\n", k->cc_group, k->cc_name ? " " : "",
		k->cc_name ? k->cc_name : "", k->cc_args[0] ? " " : "",
		k->cc_args);
}

/* Print the commands of group (all when NULL), one usage line each. */
static void help_list(const char *group)
{
	size_t i;

	for (i = 0; i < NR_CMDS; i++)
		if (group == NULL || strcmp(cmds[i].cc_group, group) == 0)
			usage_line(stdout, &cmds[i]);
}

/* Help lines of the command-specific options in mask. */
static void help_opts(uint32_t mask)
{
	static const struct { uint32_t bit; const char *text; } lines[] = {
		{ CO_BLOCK, "--block-size BYTES   block size: a power of two "
		  "from 512 to 64M; K, M suffixes (default 4K)" },
		{ CO_BLOCK, "--block-shift N      block size as log2 of bytes "
		  "(9..26)" },
		{ CO_TIER, "--tier T             plain layout on nvram, flash, "
		  "sas or smr (default flash)" },
		{ CO_LAYOUT, "--layout L           plain, pdclust or mirror "
		  "(default: the container's)" },
		{ CO_LAYOUT, "--pool NAME          pdclust, mirror: the pool "
		  "(see 'strata pools'; default: the configured one)" },
		{ CO_LAYOUT, "--data N             pdclust: data units per "
		  "group (default 4); before the command, --data is the store" },
		{ CO_LAYOUT, "--parity K           pdclust: parity units per "
		  "group (default 2)" },
		{ CO_LAYOUT, "--spare S            pdclust, mirror: spare units "
		  "per group for repair (default 0)" },
		{ CO_LAYOUT, "--copies N           mirror: copies of each unit "
		  "(default 2)" },
		{ CO_LAYOUT, "--unit SIZE          pdclust, mirror: unit size, a "
		  "power of two from 4K to 16M (default 64K, or the block size)" },
		{ CO_LIVE, "--live PCT           clean zones at most PCT % live "
		  "(0..100, default 25)" },
		{ CO_OVERWRITE, "--overwrite          replace the value of an "
		  "existing key" },
		{ CO_COUNT, "--count N            at most N records (addb top: "
		  "views) to print; default above" },
		{ CO_EXCLUDE, "--exclude-start      start after START_KEY, not "
		  "at it" },
		{ CO_HEX, "--hex                keys and values are given and "
		  "printed as hex digits" },
		{ CO_RESET, "--reset              clear the statistics" },
		{ CO_METRICS, "--pid P              the metrics of process P" },
		{ CO_METRICS, "--file F             the metrics in region file "
		  "F" },
		{ CO_METRICS, "--min-priority P     families of priority >= P "
		  "only (0..100)" },
		{ CO_METRICS, "--sweep              remove the regions of "
		  "processes that no longer run" },
		{ CO_FDMI_SUB, "--max-bytes N        bytes of records not "
		  "acked before LAGGING; K, M, G suffixes (default 64M)" },
		{ CO_FDMI_SUB, "--max-age SECS       age of the oldest record "
		  "not acked before LAGGING (default 3600)" },
		{ CO_FDMI_SUB, "--from-start         receive every record still "
		  "kept, not only the later ones" },
		{ CO_FDMI_TAIL, "--follow             wait for new records (until "
		  "--count N of them, or SIGINT/SIGTERM)" },
		{ CO_FDMI_TAIL, "--no-ack             leave the records printed "
		  "to be read again" },
		{ CO_MOVE, "--to TIER            the tier to move to: nvram, "
		  "flash, sas, smr (required)" },
		{ CO_MOVE, "--range A:B          only blocks A to B-1 (default: "
		  "the whole object)" },
		{ CO_ISC_REG, "--decl FILE          a declarative program "
		  "(docs/isc.md)" },
		{ CO_ISC_REG, "--lua FILE           a Lua 5.4 script" },
		{ CO_ISC_REG, "--native PATH        a trusted shared object "
		  "(servers must allow its path)" },
		{ CO_ISC_CALL, "--obj ID             run on object ID's "
		  "units" },
		{ CO_ISC_CALL, "--start B            first block (objects; "
		  "default 0)" },
		{ CO_ISC_CALL, "--blocks N           blocks from --start "
		  "(default: to the object's end)" },
		{ CO_ISC_CALL, "--idx ID             run on index ID's "
		  "records" },
		{ CO_ISC_CALL, "--from KEY           first key (indices; "
		  "default: the first)" },
		{ CO_ISC_CALL, "--to KEY             end of the key range, "
		  "not included (default: none)" },
		{ CO_ISC_CALL, "--container ID       run on every object and "
		  "index of container ID" },
		{ CO_ISC_CALL, "--args STR           bytes given to the "
		  "function (Lua: ARGS)" },
		{ CO_ISC_CALL, "--deadline MS        per run (default 1000)" },
		{ CO_ISC_CALL, "--mem BYTES          a Lua run's memory cap "
		  "(default 8M)" },
		{ CO_ISC_CALL, "--out-max BYTES      output cap per run and "
		  "merged (default 1M)" },
		{ CO_OPS, "--ops N              ops per test (default 5000)" },
		{ CO_YES, "--yes                confirm that the store is to "
		  "go" },
	};
	size_t i;

	for (i = 0; i < sizeof lines / sizeof lines[0]; i++)
		if (mask & lines[i].bit)
			printf("  %s\n", lines[i].text);
}

/* Print the global help. */
static void help_global(void)
{
	printf("strata — command-line client of the Strata tiered object "
	       "store\n\n"
	       "usage: strata [--data DIR] [--config FILE] [--model] "
	       "[--meta-nvram]\n"
	       "              [--json] [-q] [-v] COMMAND ...\n\n"
	       "global options:\n"
	       "  --data DIR       store directory (default $STRATA_DATA, "
	       "else %s);\n"
	       "                   a store is created there on first use\n"
	       "  --dev-size BYTES size of each device when the store is "
	       "created (default:\n"
	       "                   the configuration's device_size, else "
	       "256M)\n"
	       "  --config FILE    YAML store configuration used when the "
	       "store is created\n"
	       "                   (devices, pools, layouts; see "
	       "docs/configuration.md)\n"
	       "  --model          device model on: devices take the latency "
	       "and bandwidth\n"
	       "                   of their class (this run only)\n"
	       "  --meta-nvram     when the store is created: keep its "
	       "metadata on the\n"
	       "                   NVRAM tier (/dev/shm); on emulated NVRAM "
	       "the store does\n"
	       "                   not survive a reboot ('cluster up': every "
	       "server's)\n"
	       "  --cluster FILE   cluster mode: run against the servers of "
	       "this cluster\n"
	       "                   file (docs/cluster.md) instead of --data\n"
	       "  --server A:P     cluster mode: fetch the cluster file from "
	       "the server at\n"
	       "                   A:P (the secret in $STRATA_SECRET)\n"
	       "  --json           print results as JSON\n"
	       "  -q, --quiet      print only requested data, no "
	       "confirmations or progress\n"
	       "  -v, --verbose    library log messages on stderr (repeat "
	       "for more)\n"
	       "  -h, --help       help; 'strata COMMAND --help' for one "
	       "command\n\ncommands:\n", CLI_DATA_DEFAULT);
	help_list(NULL);
	printf("  strata help [COMMAND]\n\n"
	       "IDs are \"HI:LO\" in hex (e.g. 1:0) or \"@name\".  Put \"--\" "
	       "before keys or values\nthat start with '-'.  Exit status: 0 "
	       "ok, 1 failed, 2 usage error.\n");
}

/* Print text as a paragraph wrapped at 76 columns. */
static void print_wrapped(const char *text)
{
	const char *p = text;
	int col = 0, len;

	while (*p != '\0') {
		while (*p == ' ')
			p++;
		len = (int)strcspn(p, " ");
		if (len == 0)
			break;
		if (col > 0 && col + 1 + len > 76) {
			putchar('\n');
			col = 0;
		} else if (col > 0) {
			putchar(' ');
			col++;
		}
		printf("%.*s", len, p);
		col += len;
		p += len;
	}
	putchar('\n');
}

/* Print the help of one command. */
static void help_cmd(const struct cli_cmd *k)
{
	printf("usage:\n");
	usage_line(stdout, k);
	putchar('\n');
	print_wrapped(k->cc_help);
	if (k->cc_opts != 0) {
		printf("\noptions:\n");
		help_opts(k->cc_opts);
	}
}

/* Print help for the words in pos (none: global help). */
static int help_words(struct cli *c, const char *const *pos, int n)
{
	struct raw r = { .r_npos = n };
	const struct cli_cmd *k;
	int words;

	if (n == 0) {
		help_global();
		return CLI_OK;
	}
	memcpy(r.r_pos, pos, (size_t)n * sizeof pos[0]);
	k = cmd_find(&r, &words);
	if (k != NULL) {
		help_cmd(k);
		return CLI_OK;
	}
	if (is_group(pos[0]) && n == 1) {
		printf("usage:\n");
		help_list(pos[0]);
		return CLI_OK;
	}
	if (is_group(pos[0])) {
		c->c_group = pos[0];
		return cli_usage(c, "unknown command '%s %s'", pos[0], pos[1]);
	}
	return cli_usage(c, "unknown command '%s'", pos[0]);
}

/* Check that only options allowed for the command were given. */
static int check_opts(struct cli *c, const struct raw *r)
{
	int i;

	for (i = 0; i < O_NR; i++)
		if (r->r_set[i] && opt_defs[i].od_bit != 0 &&
		    !(opt_defs[i].od_bit & c->c_cmd->cc_opts))
			return cli_usage(c, "option --%s does not apply here",
					 opt_defs[i].od_long);
	return 0;
}

/* Turn --block-size or --block-shift into c_block_shift. */
static int apply_block(struct cli *c, const struct raw *r)
{
	uint64_t v;

	if (r->r_set[O_BLOCK_SIZE] && r->r_set[O_BLOCK_SHIFT])
		return cli_usage(c, "give --block-size or --block-shift, "
				 "not both");
	if (r->r_set[O_BLOCK_SHIFT]) {
		if (!cli_parse_u64(r->r_val[O_BLOCK_SHIFT], &v) || v > 63)
			return cli_usage(c, "bad block shift '%s'",
					 r->r_val[O_BLOCK_SHIFT]);
		c->c_block_shift = (uint32_t)v;
	} else if (r->r_set[O_BLOCK_SIZE]) {
		if (!cli_parse_size(r->r_val[O_BLOCK_SIZE], &v))
			return cli_usage(c, "bad block size '%s'",
					 r->r_val[O_BLOCK_SIZE]);
		if (v == 0 || (v & (v - 1)) != 0)
			return cli_usage(c, "block size %s is not a power of "
					 "two", r->r_val[O_BLOCK_SIZE]);
		c->c_block_shift = (uint32_t)__builtin_ctzll(v);
	}
	c->c_block_set = r->r_set[O_BLOCK_SIZE] || r->r_set[O_BLOCK_SHIFT];
	return 0;
}

/* Parse the numeric option id into *out, if given. */
static int apply_num(struct cli *c, const struct raw *r, int id,
		     bool *set, uint64_t *out)
{
	*set = r->r_set[id];
	if (*set && !cli_parse_u64(r->r_val[id], out))
		return cli_usage(c, "--%s '%s' is not a number",
				 opt_defs[id].od_long, r->r_val[id]);
	return 0;
}

/* Parse a unit count option (0..CLOVIS_LAYOUT_UNITS_MAX), if given. */
static int apply_units(struct cli *c, const struct raw *r, int id,
		       bool *set, uint32_t *out)
{
	uint64_t v = 0;
	int rc = apply_num(c, r, id, set, &v);

	if (rc != 0 || !*set)
		return rc;
	if (v > CLOVIS_LAYOUT_UNITS_MAX)
		return cli_usage(c, "--%s %s is more than %u units",
				 opt_defs[id].od_long, r->r_val[id],
				 CLOVIS_LAYOUT_UNITS_MAX);
	*out = (uint32_t)v;
	return 0;
}

/* Turn --unit into c_unit_shift: a power of two, 4 KiB .. 16 MiB. */
static int apply_unit(struct cli *c, const struct raw *r)
{
	const char *s = r->r_val[O_UNIT];
	uint64_t v;

	if (!r->r_set[O_UNIT])
		return 0;
	if (!cli_parse_size(s, &v))
		return cli_usage(c, "bad unit size '%s'", s);
	if (v == 0 || (v & (v - 1)) != 0)
		return cli_usage(c, "unit size %s is not a power of two", s);
	if (v < (1ull << CLOVIS_UNIT_SHIFT_MIN) ||
	    v > (1ull << CLOVIS_UNIT_SHIFT_MAX))
		return cli_usage(c, "unit size %s is outside 4K..16M", s);
	c->c_unit_shift = (uint32_t)__builtin_ctzll(v);
	return 0;
}

/* The first layout option given other than --layout, or O_NR. */
static int layout_opt_given(const struct raw *r)
{
	static const int ids[] = { O_POOL, O_DATA_UNITS, O_PARITY, O_SPARE,
				   O_COPIES, O_UNIT };
	size_t i;

	for (i = 0; i < sizeof ids / sizeof ids[0]; i++)
		if (r->r_set[ids[i]])
			return ids[i];
	return O_NR;
}

/* Check that the layout options given fit the layout chosen. */
static int check_layout(struct cli *c, const struct raw *r)
{
	int given = layout_opt_given(r);
	const char *name = given < O_NR ? opt_defs[given].od_long : "";

	if (given < O_NR && c->c_layout == 0)
		return cli_usage(c, "--%s needs --layout pdclust or mirror",
				 name);
	if (given < O_NR && (c->c_layout == CLOVIS_LAYOUT_PLAIN ||
			     c->c_layout == CLOVIS_LAYOUT_COMPOSITE))
		return cli_usage(c, "--%s does not apply to the %s layout",
				 name, c->c_layout == CLOVIS_LAYOUT_PLAIN ?
				 "plain" : "composite");
	if (c->c_tier >= 0 && c->c_layout != 0 &&
	    c->c_layout != CLOVIS_LAYOUT_PLAIN &&
	    c->c_layout != CLOVIS_LAYOUT_COMPOSITE)
		return cli_usage(c, "--tier applies to the plain and "
				 "composite layouts only (pdclust and mirror "
				 "use a --pool)");
	if (c->c_layout == CLOVIS_LAYOUT_MIRROR && c->c_parity_set)
		return cli_usage(c, "a mirror has no parity: --parity does not "
				 "apply (use --copies)");
	if (c->c_layout == CLOVIS_LAYOUT_MIRROR && c->c_data_set)
		return cli_usage(c, "a mirror takes --copies, not --data");
	if (c->c_layout == CLOVIS_LAYOUT_PDCLUST && c->c_copies_set)
		return cli_usage(c, "--copies applies to mirror only (pdclust "
				 "takes --data and --parity)");
	if (c->c_data_set && c->c_data == 0)
		return cli_usage(c, "--data must be at least 1");
	if (c->c_copies_set && c->c_copies < 2)
		return cli_usage(c, "--copies must be at least 2");
	return 0;
}

/* Turn --layout, --pool and the unit counts into fields of c. */
static int apply_layout(struct cli *c, const struct raw *r)
{
	int l, rc;

	c->c_layout = 0;
	if (r->r_set[O_LAYOUT]) {
		l = cli_parse_layout(r->r_val[O_LAYOUT]);
		if (l < 0)
			return cli_usage(c, "unknown layout '%s' (use plain, "
					 "pdclust, mirror or composite)",
					 r->r_val[O_LAYOUT]);
		c->c_layout = (uint32_t)l;
	}
	if (r->r_set[O_POOL] && r->r_val[O_POOL][0] == '\0')
		return cli_usage(c, "--pool needs a pool name");
	c->c_pool = r->r_set[O_POOL] ? r->r_val[O_POOL] : NULL;
	if (r->r_set[O_DATA_UNITS] && !cli_parse_u64(r->r_val[O_DATA_UNITS],
						     &(uint64_t){0}))
		return cli_usage(c, "--data '%s' is not a number: after the "
				 "command, --data is the count of data units "
				 "(give the store directory before the "
				 "command)", r->r_val[O_DATA_UNITS]);
	rc = apply_units(c, r, O_DATA_UNITS, &c->c_data_set, &c->c_data);
	if (rc == 0)
		rc = apply_units(c, r, O_PARITY, &c->c_parity_set,
				 &c->c_parity);
	if (rc == 0)
		rc = apply_units(c, r, O_SPARE, &c->c_spare_set, &c->c_spare);
	if (rc == 0)
		rc = apply_units(c, r, O_COPIES, &c->c_copies_set,
				 &c->c_copies);
	if (rc == 0)
		rc = apply_unit(c, r);
	if (rc == 0)
		rc = check_layout(c, r);
	return rc;
}

/* --pid, --file, --min-priority, --sweep (strata metrics). */
static int apply_metrics(struct cli *c, const struct raw *r)
{
	bool set;
	int rc = apply_num(c, r, O_PID, &set, &c->c_pid);

	if (rc == 0 && set && (c->c_pid == 0 || c->c_pid > INT32_MAX))
		return cli_usage(c, "--pid %s is not a process id",
				 r->r_val[O_PID]);
	if (rc == 0)
		rc = apply_num(c, r, O_MIN_PRIO, &set, &c->c_min_prio);
	if (rc == 0 && c->c_min_prio > 100)
		return cli_usage(c, "--min-priority %s is not a priority "
				 "(0..100)", r->r_val[O_MIN_PRIO]);
	c->c_file = r->r_set[O_FILE] ? r->r_val[O_FILE] : NULL;
	c->c_sweep = r->r_set[O_SWEEP];
	if (rc == 0 && c->c_pid != 0 && c->c_file != NULL)
		return cli_usage(c, "--pid and --file name one region: give "
				 "one of them");
	if (rc == 0 && c->c_sweep && (c->c_pid != 0 || c->c_file != NULL))
		return cli_usage(c, "--sweep reads no region: give it alone");
	return rc;
}

/* Largest --max-age in seconds: clovis_fdmi_sub() takes milliseconds and
 * keeps nanoseconds in 64 bits. */
#define FDMI_MAX_AGE_S_MAX (UINT64_MAX / 1000000000ull)

/* --max-bytes, --max-age, --from-start (fdmi sub); --follow, --no-ack and
 * a --count of at least 1 (fdmi tail). */
/* --to and --range (strata obj move). */
static int apply_move(struct cli *c, const struct raw *r)
{
	c->c_to = -1;
	c->c_range_set = false;
	if (r->r_set[O_TO] && (c->c_cmd->cc_opts & CO_MOVE)) {
		c->c_to = cli_parse_tier(r->r_val[O_TO]);
		if (c->c_to < 0)
			return cli_usage(c, "--to '%s' is not a tier (nvram, "
					 "flash, sas, smr)", r->r_val[O_TO]);
	}
	if (r->r_set[O_RANGE]) {
		const char *v = r->r_val[O_RANGE], *colon = strchr(v, ':');
		char a[32];

		if (colon == NULL || (size_t)(colon - v) >= sizeof a)
			return cli_usage(c, "--range '%s': A:B (blocks A to "
					 "B-1)", v);
		memcpy(a, v, (size_t)(colon - v));
		a[colon - v] = '\0';
		if (!cli_parse_u64(a, &c->c_range_a) ||
		    !cli_parse_u64(colon + 1, &c->c_range_b) ||
		    c->c_range_b <= c->c_range_a)
			return cli_usage(c, "--range '%s': A:B with A < B "
					 "(blocks A to B-1)", v);
		c->c_range_set = true;
	}
	return 0;
}

static int apply_fdmi(struct cli *c, const struct raw *r)
{
	bool set;
	int rc;

	c->c_from_start = r->r_set[O_FROM_START];
	c->c_follow = r->r_set[O_FOLLOW];
	c->c_no_ack = r->r_set[O_NO_ACK];
	if (r->r_set[O_MAX_BYTES] &&
	    (!cli_parse_size(r->r_val[O_MAX_BYTES], &c->c_max_bytes) ||
	     c->c_max_bytes == 0))
		return cli_usage(c, "--max-bytes '%s' is not a size of at "
				 "least 1 byte (leave it out for the default "
				 "64M)", r->r_val[O_MAX_BYTES]);
	rc = apply_num(c, r, O_MAX_AGE, &set, &c->c_max_age_s);
	if (rc == 0 && set &&
	    (c->c_max_age_s == 0 || c->c_max_age_s > FDMI_MAX_AGE_S_MAX))
		return cli_usage(c, "--max-age %s is outside 1..%llu seconds "
				 "(leave it out for the default 3600)",
				 r->r_val[O_MAX_AGE],
				 (unsigned long long)FDMI_MAX_AGE_S_MAX);
	if (rc == 0 && (c->c_cmd->cc_opts & CO_FDMI_TAIL) &&
	    c->c_count_set && c->c_count == 0)
		return cli_usage(c, "--count 0: give at least 1 record (leave "
				 "it out for every record there is)");
	return rc;
}

/* The options of the isc commands, as typed (checked by cli_isc.c). */
static void apply_isc(struct cli *c, const struct raw *r)
{
	static const int ids[CI_NR] = {
		[CI_DECL] = O_DECL, [CI_LUA] = O_LUA, [CI_NATIVE] = O_NATIVE,
		[CI_OBJ] = O_OBJ, [CI_IDX] = O_IDX,
		[CI_CONTAINER] = O_CONTAINER, [CI_START] = O_START,
		[CI_BLOCKS] = O_BLOCKS, [CI_FROM] = O_FROM, [CI_TO] = O_TO,
		[CI_ARGS] = O_ARGS, [CI_DEADLINE] = O_DEADLINE,
		[CI_MEM] = O_MEM, [CI_OUT_MAX] = O_OUT_MAX,
	};

	for (int i = 0; i < CI_NR; i++)
		c->c_isc[i] = r->r_set[ids[i]] ? r->r_val[ids[i]] : NULL;
}

/* Turn --live into c_live: a percentage. */
static int apply_live(struct cli *c, const struct raw *r)
{
	uint64_t v = 0;
	int rc = apply_num(c, r, O_LIVE, &c->c_live_set, &v);

	if (rc != 0 || !c->c_live_set)
		return rc;
	if (v > 100)
		return cli_usage(c, "--live %s is not a percentage (0..100)",
				 r->r_val[O_LIVE]);
	c->c_live = (uint32_t)v;
	return 0;
}

/*
 * Turn --call-timeout into c_call_ms: digits and "ms" or "s" (bare
 * digits are milliseconds, as in the cluster file), 1 ms .. 1 h.
 */
static int apply_call_timeout(struct cli *c, const struct raw *r)
{
	const char *s = r->r_val[O_CALL_TIMEOUT];
	unsigned long long v;
	uint64_t mult = 1;
	char *end;

	c->c_call_ms = 0;
	if (!r->r_set[O_CALL_TIMEOUT])
		return 0;
	if (s[0] < '0' || s[0] > '9')
		return cli_usage(c, "--call-timeout '%s' is not a duration "
				 "(500ms, 3s)", s);
	errno = 0;
	v = strtoull(s, &end, 10);
	if (strcmp(end, "s") == 0)
		mult = 1000;
	else if (*end != '\0' && strcmp(end, "ms") != 0)
		return cli_usage(c, "--call-timeout '%s': the unit must be ms "
				 "or s", s);
	if (errno != 0 || v == 0 || v > CALL_TIMEOUT_MS_MAX / mult)
		return cli_usage(c, "--call-timeout %s is outside 1ms..1h", s);
	c->c_call_ms = (uint32_t)(v * mult);
	return 0;
}

/* Turn the command's option values into fields of c. */
static int apply_opts(struct cli *c, const struct raw *r)
{
	bool dev_set;
	int rc;

	c->c_hex = r->r_set[O_HEX];
	c->c_overwrite = r->r_set[O_OVERWRITE];
	c->c_exclude = r->r_set[O_EXCLUDE];
	c->c_reset = r->r_set[O_RESET];
	c->c_yes = r->r_set[O_YES];
	c->c_tier = -1;
	if (r->r_set[O_TIER]) {
		c->c_tier = cli_parse_tier(r->r_val[O_TIER]);
		if (c->c_tier < 0)
			return cli_usage(c, "unknown tier '%s' (use nvram, "
					 "flash, sas or smr)",
					 r->r_val[O_TIER]);
	}
	rc = apply_block(c, r);
	if (rc == 0)
		rc = apply_num(c, r, O_COUNT, &c->c_count_set, &c->c_count);
	if (rc == 0)
		rc = apply_num(c, r, O_OPS, &c->c_ops_set, &c->c_ops);
	if (rc == 0)
		rc = apply_layout(c, r);
	if (rc == 0)
		rc = apply_live(c, r);
	if (rc == 0)
		rc = apply_metrics(c, r);
	if (rc == 0)
		rc = apply_call_timeout(c, r);
	if (rc == 0)
		rc = apply_fdmi(c, r);
	if (rc == 0)
		rc = apply_move(c, r);
	apply_isc(c, r);
	c->c_nodes = 3;
	c->c_base_port = 21000;
	c->c_dir = r->r_set[O_DIR] ? r->r_val[O_DIR] : "./strata-cluster";
	c->c_nvram_dir = r->r_set[O_NVRAM_DIR] ? r->r_val[O_NVRAM_DIR] : NULL;
	if (rc == 0 && r->r_set[O_NODES] &&
	    (!cli_parse_u64(r->r_val[O_NODES], &c->c_nodes) ||
	     c->c_nodes == 0 || c->c_nodes > 16))
		rc = cli_usage(c, "--nodes: 1 to 16");
	c->c_etcd_members = r->r_set[O_NO_ETCD] ? 0 : 1;
	c->c_ha_test = r->r_set[O_HA_TEST];
	c->c_dev_fill = r->r_set[O_DEV_FILL] ? r->r_val[O_DEV_FILL] : "reserve";
	if (rc == 0 && strcmp(c->c_dev_fill, "zero") != 0 &&
	    strcmp(c->c_dev_fill, "reserve") != 0)
		rc = cli_usage(c, "--device-fill '%s': zero or reserve",
			       c->c_dev_fill);
	if (rc == 0 && c->c_ha_test && r->r_set[O_NO_ETCD])
		rc = cli_usage(c, "--ha-test needs etcd (not --no-etcd)");
	if (rc == 0 && r->r_set[O_META_REPLICAS] &&
	    (!cli_parse_u64(r->r_val[O_META_REPLICAS], &c->c_meta_replicas) ||
	     c->c_meta_replicas == 0 || c->c_meta_replicas > 8))
		rc = cli_usage(c, "--meta-replicas: 1 to 8");
	c->c_flash_mib = 0;
	if (rc == 0 && r->r_set[O_FLASH_SIZE]) {
		uint64_t b = 0;

		if (!cli_parse_size(r->r_val[O_FLASH_SIZE], &b) ||
		    b % (1u << 20) != 0 || b < (4u << 20) ||
		    b > (64ull << 30))
			rc = cli_usage(c, "--flash-size '%s': 4MiB to 64GiB "
				       "in whole MiB", r->r_val[O_FLASH_SIZE]);
		c->c_flash_mib = (uint32_t)(b >> 20);
	}
	if (rc == 0 && r->r_set[O_NO_ETCD] && r->r_set[O_ETCD_MEMBERS])
		rc = cli_usage(c, "--etcd-members and --no-etcd: one or the "
			       "other");
	if (rc == 0 && r->r_set[O_ETCD_MEMBERS] &&
	    (!cli_parse_u64(r->r_val[O_ETCD_MEMBERS], &c->c_etcd_members) ||
	     c->c_etcd_members % 2 == 0 || c->c_etcd_members > 7))
		rc = cli_usage(c, "--etcd-members: 1, 3, 5 or 7");
	if (rc == 0 && r->r_set[O_BASE_PORT] &&
	    (!cli_parse_u64(r->r_val[O_BASE_PORT], &c->c_base_port) ||
	     c->c_base_port < 1024 || c->c_base_port + c->c_nodes +
	     2 * c->c_etcd_members > 65536))
		rc = cli_usage(c, "--base-port: 1024..65535 minus the nodes "
			       "and two ports per etcd member");
	if (rc == 0 && r->r_set[O_DEV_SIZE]) {
		dev_set = cli_parse_size(r->r_val[O_DEV_SIZE], &c->c_dev_size);
		if (!dev_set)
			rc = cli_usage(c, "bad device size '%s'",
				       r->r_val[O_DEV_SIZE]);
	}
	return rc;
}

/* Set the global options: data directory, output and log modes. */
static void apply_global(struct cli *c, const struct raw *r)
{
	const char *env = getenv("STRATA_DATA");

	c->c_data_dir = CLI_DATA_DEFAULT;
	if (env != NULL && env[0] != '\0')
		c->c_data_dir = env;
	if (r->r_set[O_DATA])
		c->c_data_dir = r->r_val[O_DATA];
	c->c_json = r->r_set[O_JSON];
	c->c_config = r->r_set[O_CONFIG] ? r->r_val[O_CONFIG] : NULL;
	c->c_model = r->r_set[O_MODEL];
	c->c_meta_nvram = r->r_set[O_META_NVRAM];
	c->c_cluster = r->r_set[O_CLUSTER] ? r->r_val[O_CLUSTER] : NULL;
	c->c_server = r->r_set[O_SERVER] ? r->r_val[O_SERVER] : NULL;
	c->c_secret = getenv("STRATA_SECRET");
	c->c_quiet = r->r_set[O_QUIET];
	c->c_help = r->r_set[O_HELP];
	c->c_verbose = r->r_verbose;
}

/* Find the command, check its arguments and options. */
static int resolve(struct cli *c, const struct raw *r)
{
	int words = 0, i;

	c->c_cmd = cmd_find(r, &words);
	if (c->c_cmd == NULL && is_group(r->r_pos[0]))
		c->c_group = r->r_pos[0];
	if (c->c_group != NULL)
		return r->r_npos > 1 ?
			cli_usage(c, "unknown command '%s %s'", r->r_pos[0],
				  r->r_pos[1]) :
			cli_usage(c, "'%s' needs a sub-command", r->r_pos[0]);
	if (c->c_cmd == NULL)
		return cli_usage(c, "unknown command '%s'", r->r_pos[0]);
	c->c_nargs = r->r_npos - words;
	for (i = 0; i < c->c_nargs; i++)
		c->c_args[i] = r->r_pos[words + i];
	if (c->c_nargs < c->c_cmd->cc_min_args)
		return cli_usage(c, "missing arguments");
	if (c->c_nargs > c->c_cmd->cc_max_args)
		return cli_usage(c, "too many arguments");
	if (r->r_set[O_DATA] && r->r_val[O_DATA][0] == '\0')
		return cli_usage(c, "--data needs a directory");
	if (r->r_set[O_CONFIG] && r->r_val[O_CONFIG][0] == '\0')
		return cli_usage(c, "--config needs a file");
	return check_opts(c, r);
}

/* Run the command of c: decode its records (CO_RECORDS), open the store,
 * call it, close the store. */
static int run(struct cli *c)
{
	int rc = 0;

	if (c->c_cmd->cc_opts & CO_RECORDS)
		rc = cli_recs_parse(c);
	if (rc == 0 && c->c_cmd->cc_store)
		rc = cli_store_open(c);
	if (rc == 0)
		rc = c->c_cmd->cc_fn(c);
	if (fflush(stdout) != 0 && rc == 0)
		rc = cli_sys(errno, "write output");
	clovis_fini(c->c_cl);
	c->c_cl = NULL;
	cli_recs_free(c);
	return rc;
}

/* Parse the command line and run the one command it names. */
int main(int argc, char **argv)
{
	static struct cli c;
	struct raw r;
	int rc;

	memset(&r, 0, sizeof r);
	rc = parse_argv(&c, &r, argc, argv);
	if (rc != 0)
		return rc;
	apply_global(&c, &r);
	if (r.r_npos > 0 && strcmp(r.r_pos[0], "help") == 0)
		return help_words(&c, r.r_pos + 1, r.r_npos - 1);
	if (c.c_help)
		return help_words(&c, r.r_pos, r.r_npos);
	if (r.r_npos == 0)
		return cli_usage(&c, "no command given");
	rc = resolve(&c, &r);
	if (rc == 0)
		rc = apply_opts(&c, &r);
	if (rc == 0)
		rc = run(&c);
	return rc;
}
