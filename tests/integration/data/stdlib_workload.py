# A broad, deterministic Python standard-library workload: run inside profile.python and outside,
# its stdout must be byte-identical and its stderr empty. Nothing here prints paths, pids or times.
import asyncio, base64, bz2, collections, csv, dataclasses, datetime, decimal, fractions, functools
import gzip, hashlib, heapq, hmac, io, itertools, json, lzma, math, os, pathlib, pickle, random
import re, secrets, sqlite3, ssl, statistics, string, struct, tempfile, textwrap, threading
import unicodedata, uuid, zipfile, zlib, zoneinfo

out = []
def p(*a):
    out.append(" ".join(str(x) for x in a))

# json, pickle, struct, base64
doc = {"a": [1, 2.5, None, True], "b": {"c": "é\u2603"}, "n": 10**20}
p("json", json.dumps(doc, sort_keys=True, ensure_ascii=False))
p("pickle", pickle.loads(pickle.dumps(doc)) == doc)
p("struct", struct.pack("<iHd", -7, 65535, 1.5).hex())
p("b64", base64.b64encode(b"sandboxer").decode())

# decimal, fractions, math, statistics
decimal.getcontext().prec = 40
p("decimal", decimal.Decimal(1) / decimal.Decimal(7))
p("fraction", fractions.Fraction(3, 4) + fractions.Fraction(5, 6))
p("math", math.factorial(30), round(math.pi, 12), math.gcd(1071, 462))
p("stats", statistics.mean([1, 2, 3, 4.5]), statistics.median([5, 1, 3]))

# hashing, hmac, compression
data = b"The quick brown fox jumps over the lazy dog" * 100
p("sha256", hashlib.sha256(data).hexdigest())
p("blake2", hashlib.blake2b(data, digest_size=16).hexdigest())
p("hmac", hmac.new(b"k", data, "sha1").hexdigest())
for name, mod in (("zlib", zlib), ("gzip", gzip), ("bz2", bz2), ("lzma", lzma)):
    p(name, mod.decompress(mod.compress(data)) == data)

# re, string, textwrap, unicodedata
p("re", re.findall(r"\b(\w)(\w*)\b", "alpha beta gamma")[:2])
p("textwrap", textwrap.fill("lorem ipsum dolor sit amet " * 3, 30).count("\n"))
p("unicode", unicodedata.name("\u2603"), unicodedata.normalize("NFD", "é").encode().hex())

# random with a seed, uuid5, collections, itertools, heapq, functools
rng = random.Random(42)
p("random", [rng.randint(0, 100) for _ in range(5)])
p("uuid5", uuid.uuid5(uuid.NAMESPACE_DNS, "sandboxer.example"))
p("counter", sorted(collections.Counter("mississippi").items()))
p("itertools", list(itertools.islice(itertools.permutations("abc"), 4)))
p("heapq", heapq.nsmallest(3, [5, 1, 8, 3, 9, 2]))
p("lru", functools.lru_cache()(lambda n: n * n)(12))
p("secrets", len(secrets.token_hex(16)))

@dataclasses.dataclass(frozen=True)
class Point:
    x: int
    y: int
p("dataclass", Point(1, 2), dataclasses.asdict(Point(3, 4)))

# datetime and zoneinfo (the tz database under /usr)
dt = datetime.datetime(2024, 3, 10, 12, 0, tzinfo=zoneinfo.ZoneInfo("America/New_York"))
p("zoneinfo", dt.isoformat(), dt.astimezone(datetime.timezone.utc).isoformat())

# tempfile, pathlib, csv, zipfile, sqlite3 — in TMPDIR
tmp = tempfile.gettempdir()
p("tmpdir-is-env", tmp == os.environ.get("TMPDIR", tmp))
with tempfile.TemporaryDirectory() as d:
    path = pathlib.Path(d) / "t.csv"
    with path.open("w", newline="") as f:
        csv.writer(f).writerows([["a", "b"], [1, 2], [3, 4]])
    p("csv", list(csv.reader(path.open())))
    z = pathlib.Path(d) / "t.zip"
    with zipfile.ZipFile(z, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("x.txt", "zipped" * 10)
    with zipfile.ZipFile(z) as zf:
        p("zip", zf.read("x.txt")[:12])
    db = sqlite3.connect(str(pathlib.Path(d) / "t.db"))
    db.execute("create table t (k integer primary key, v text)")
    db.executemany("insert into t (v) values (?)", [("one",), ("two",), ("three",)])
    db.commit()
    p("sqlite", db.execute("select count(*), group_concat(v, '+') from t").fetchone())
    db.close()
mem = sqlite3.connect(":memory:")
p("sqlite-mem", mem.execute("select sqlite_version() is not null, 6*7").fetchone())

# ssl: a client context loads the system trust store (read-only /etc/ssl/certs); no network.
ctx = ssl.create_default_context()
p("ssl", ctx.verify_mode == ssl.CERT_REQUIRED, ctx.check_hostname, ctx.cert_store_stats()["x509_ca"] > 0)

# threading
total = []
lock = threading.Lock()
def work(n):
    s = sum(i * i for i in range(n))
    with lock:
        total.append(s)
ts = [threading.Thread(target=work, args=(1000 + i,)) for i in range(8)]
[t.start() for t in ts]
[t.join() for t in ts]
p("threads", len(total), sum(total))

# asyncio: its event loop needs socketpair(AF_UNIX)
async def main():
    q = asyncio.Queue()
    async def producer():
        for i in range(5):
            await q.put(i)
            await asyncio.sleep(0)
        await q.put(None)
    async def consumer():
        got = []
        while (v := await q.get()) is not None:
            got.append(v)
        return got
    _, got = await asyncio.gather(producer(), consumer())
    return got
p("asyncio", asyncio.run(main()))

print("\n".join(out))
