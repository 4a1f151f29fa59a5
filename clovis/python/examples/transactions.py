"""transactions.py — a dtx: a transfer between two accounts, all or nothing.

Run: python3 transactions.py [cluster:FILE]
"""
from _common import example_store, unique

import strata

with example_store() as store:
    accounts = store.create_index(unique("accounts"))
    journal = store.create_object(unique("journal"), block_size=4096)
    accounts.put_many([(b"alice", b"100"), (b"bob", b"50")])

    def transfer(tx_no, src, dst, amount):
        a, b = int(accounts[src]), int(accounts[dst])
        with store.dtx() as tx:  # commits at the end of the block
            if a < amount:
                raise ValueError("%s has %d, not %d" % (src.decode(), a,
                                                        amount))
            accounts.put(src, b"%d" % (a - amount), tx=tx)
            accounts.put(dst, b"%d" % (b + amount), tx=tx)
            line = b"%s -> %s: %d" % (src, dst, amount)
            journal.write(tx_no * 4096, line.ljust(4096, b" "), tx=tx)

    transfer(0, b"alice", b"bob", 30)
    try:
        transfer(1, b"bob", b"alice", 500)  # raises: aborted, nothing kept
    except ValueError as e:
        print("aborted:", e)
    assert accounts[b"alice"] == b"70" and accounts[b"bob"] == b"80"
    assert journal.read(4096, 4096) == bytes(4096)  # the abort left nothing
    print(journal.read(0, 4096).rstrip().decode())

    try:  # a commit that fails applies nothing either
        with store.dtx() as tx:
            accounts.put(b"carol", b"1", tx=tx)
            accounts.put(b"alice", b"0", overwrite=False, tx=tx)  # exists
    except strata.StrataError as e:
        print("commit refused:", e.code_name)
    assert b"carol" not in accounts
    accounts.delete()
    journal.delete()
print("transactions: ok")
