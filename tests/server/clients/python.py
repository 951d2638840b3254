"""python-memcached (memcache) and pymemcache against the server on
127.0.0.1:PORT (argv[1]), text protocol. Run by test_client_python.sh under
Debian's /usr/bin/python3. argv[2]: clients (the default), no-flush (the
server has -F), shutdown (it has -A) or shutdown-refused (it has not)."""
import os
import sys
import time

import memcache
from pymemcache.client.base import Client
from pymemcache.exceptions import MemcacheError, MemcacheUnknownCommandError

port = int(sys.argv[1])
SIZES = [1, 100, 1000, 10_000, 100_000, 1_000_000]
# Keys of 23 bytes: 5,000 of them make a get line of about 120 KB.
MANY = [b"multiget:%05d:abcdefgh" % i for i in range(5000)]


# RHKV_CLIENT_KEEP_GOING=1: report every failed check, fail at the end.
KEEP_GOING = os.environ.get("RHKV_CLIENT_KEEP_GOING") == "1"
failures = 0


def check(cond, what):
    global failures
    if not cond:
        print(f"FAIL: {what}", file=sys.stderr, flush=True)
        if not KEEP_GOING:
            sys.exit(1)
        failures += 1


def pymc():
    return Client(("127.0.0.1", port), connect_timeout=5, timeout=10,
                  default_noreply=False)


def done(name):
    print(f"{name}: {'done' if failures else 'all checks passed'}")


def python_memcached():
    mc = memcache.Client([f"127.0.0.1:{port}"], socket_timeout=10,
                         cache_cas=True)
    check(mc.flush_all() is None, "flush_all")
    check(mc.set("k", b"v") is True, "set")
    check(mc.get("k") == b"v", "get after set")
    check(mc.get("nx") is None, "get of a missing key")
    check(mc.add("k", b"x") is False, "add of an existing key")
    check(mc.add("k2", b"2") is True, "add")
    check(mc.replace("nx", b"x") is False, "replace of a missing key")
    check(mc.append("k2", b"3") is True and mc.prepend("k2", b"1") is True,
          "append/prepend")
    check(mc.get("k2") == b"123", f"append/prepend result {mc.get('k2')!r}")

    check(mc.set("n", 10) is True, "set of an int")
    check(mc.incr("n", 5) == 15, "incr")
    check(mc.decr("n", 100) == 0, "decr below 0")
    check(mc.incr("nx") is None, "incr of a missing key")
    check(mc.get("n") == 0, f"int round trip {mc.get('n')!r}")

    check(mc.gets("k") == b"v", "gets")
    check(mc.cas("k", b"w") is True, "cas with the fresh unique")
    mc2 = memcache.Client([f"127.0.0.1:{port}"], cache_cas=True)
    check(mc2.gets("k") == b"w", "gets from a second client")
    check(mc.set("k", b"changed") is True, "set between gets and cas")
    check(mc2.cas("k", b"lost") is False, "cas with a stale unique (EXISTS)")
    check(mc.get("k") == b"changed", "the stale cas stored nothing")
    mc2.disconnect_all()

    check(mc.delete("k") == 1 and mc.get("k") is None, "delete")
    # python-memcached takes NOT_FOUND for done as well.
    check(mc.delete("k") == 1, "delete of a missing key")

    # A relative TTL of N seconds may end after N - 1 (at a second
    # boundary): 3 leaves the touch 2 seconds. "u", set after "t" with the
    # same TTL and not touched, tells when "t" would have expired.
    check(mc.set("t", b"t", time=3) is True, "set with a TTL")
    check(mc.set("u", b"u", time=3) is True, "set with a TTL")
    check(mc.touch("t", 100) == 1, "touch")
    check(mc.touch("nx", 100) == 0, "touch of a missing key")
    end = time.monotonic() + 60
    while mc.get("u") is not None and time.monotonic() < end:
        time.sleep(0.1)
    check(mc.get("u") is None, "a TTL of 3 s never expired")
    check(mc.get("t") == b"t", "touch did not extend the TTL")

    for size in SIZES:
        value = os.urandom(size)
        check(mc.set("size:%d" % size, value) is True, f"set of {size} bytes")
        check(mc.get("size:%d" % size) == value, f"get of {size} bytes")

    values = {k.decode(): b"v%d" % i for i, k in enumerate(MANY)}
    check(mc.set_multi(values) == [], "set_multi of 5,000 keys")
    got = mc.get_multi(list(values) + ["nx1", "nx2"])
    check(got == values, f"get_multi of 5,000 keys: {len(got)} came back, "
          f"{sum(got.get(k) == v for k, v in values.items())} right")
    check(mc.delete_multi(list(values)[:100]) == 1, "delete_multi")
    check(len(mc.get_multi(list(values)[:200])) == 100, "after delete_multi")

    stats = dict(mc.get_stats())
    (name, general), = stats.items()
    check(int(general["curr_items"]) >= 4900, f"stats curr_items {general}")
    (_, items), = mc.get_stats("items")
    check(any(k.endswith(":number") and int(v) > 0 for k, v in items.items()),
          f"stats items has no items:N:number: {items}")
    (_, slabs), = mc.get_stats("slabs")
    check("active_slabs" in slabs and
          any(k.endswith(":chunk_size") for k in slabs),
          f"stats slabs: {slabs}")
    mc.disconnect_all()
    done("python-memcached")


def pymemcache_client():
    c = pymc()
    c.flush_all()
    # Control bytes (not whitespace, not NUL) are legal in text keys.
    ctl = b"ctl\x01\x02\x07\x1b\x7f:key"
    check(c.set(ctl, b"control") is True, "set of a key with control bytes")
    check(c.get(ctl) == b"control", "get of a key with control bytes")
    check(c.get_many([ctl, b"ctl"]) == {ctl: b"control"},
          "get_many of a key with control bytes")
    value, cas = c.gets(ctl)
    check(value == b"control" and cas, "gets of a key with control bytes")
    check(c.cas(ctl, b"c2", cas) is True, "cas of a key with control bytes")
    check(c.get(ctl) == b"c2", "get after cas")
    check(c.set(ctl + b"n", b"5") and c.incr(ctl + b"n", 2) == 7,
          "incr of a key with control bytes")
    check(c.touch(ctl, 100) is True, "touch of a key with control bytes")
    check(c.delete(ctl) is True and c.get(ctl) is None,
          "delete of a key with control bytes")

    for size in SIZES:
        value = os.urandom(size)
        check(c.set(b"size:%d" % size, value) is True, f"set of {size} bytes")
        check(c.get(b"size:%d" % size) == value, f"get of {size} bytes")

    values = {k: b"p%d" % i for i, k in enumerate(MANY)}
    check(c.set_many(values) == [], "set_many of 5,000 keys")
    got = c.get_many(list(values) + [b"nx"])
    check(got == values, f"get_many of 5,000 keys: {len(got)} came back")
    got = c.gets_many(list(values))
    check(len(got) == 5000 and all(got[k][0] == v for k, v in values.items()),
          "gets_many of 5,000 keys")
    c.close()
    done("pymemcache")


def refusal(call, exc):
    """The exception of type exc that call() raises, or None."""
    try:
        call()
    except exc as e:
        return e
    return None


def no_flush():
    """The server runs with -F: flush_all is refused, items stay."""
    c = pymc()
    check(c.set(b"stay", b"1") is True, "set")
    e = refusal(c.flush_all, MemcacheError)
    check(e is not None and "flush_all not allowed" in str(e),
          f"flush_all under -F: {e!r}")
    check(c.get(b"stay") == b"1", "an item is gone after a refused flush_all")
    check(c.cache_memlimit(100) is True, "cache_memlimit 100")
    c.close()
    done("pymemcache (-F)")


def shutdown(enabled):
    """shutdown: refused without -A; with it the server exits."""
    c = pymc()
    check(c.set(b"k", b"v") is True, "set")
    # "ERROR: shutdown not enabled": pymemcache keeps only the command.
    e = refusal(c.shutdown, MemcacheUnknownCommandError)
    check((e is None) == enabled, f"shutdown (-A: {enabled}): {e!r}")
    if not enabled:
        check(c.get(b"k") == b"v", "the server stopped serving after a refused shutdown")
    done("pymemcache shutdown")


mode = sys.argv[2] if len(sys.argv) > 2 else "clients"
if mode == "clients":
    python_memcached()
    pymemcache_client()
elif mode == "no-flush":
    no_flush()
else:
    shutdown(mode == "shutdown")
if failures:
    sys.exit(f"{failures} checks failed")
