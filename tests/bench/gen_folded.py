#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Writes a large, realistic folded-stacks file for benchmarking flame graph writers.

    tests/bench/gen_folded.py [--mb MB] [--stacks N] [--seed SEED] [--shuffle] [-o FILE]

FlameGraph's folded format, one `frame;frame;...;frame COUNT` line per stack, root
(the process name) first. Generation stops once the output is at least MB megabytes
(10^6 bytes, default 50) and has at least N distinct stacks (default 200000); with the
defaults it is about 127 MB, as stacks are 24 frames deep on average.

The shape imitates a whole-machine profile: a few hundred process names as roots, with
very unequal shares; a vocabulary of about 20,000 function names: C, C++ with
namespaces, templates and argument lists (so frames contain spaces), Rust, Java
(async-profiler style), kernel frames with the `_[k]` suffix, `[unknown]` and
`[libc.so.6]`-style placeholders, hot ones (malloc, memmove, the syscall entry) picked
far more often than the rest; stacks 5 to 60 frames deep, grown from each other the way
a call tree is, so that they share long prefixes; counts from a heavy-tailed (Pareto)
distribution: half of them 1, a few in the tens of thousands.

Output is sorted by stack, byte-wise, as stackcollapse-*.pl writes it; with --shuffle
the same lines come in random order (the worst case for a reader that merges runs of
equal prefixes). The same SEED and options give the same file, byte for byte, with a
given Python version. Plain Python 3 standard library; about 30 MB/s here (2 cores).
A summary goes to stderr: `gen_folded: STACKS stacks BYTES bytes SAMPLES samples`.
"""

import argparse
import random
import sys

# Fixed frames that real stacks start with, per kind of process.
HEAD_MAIN = ["_start", "__libc_start_main", "__libc_start_call_main", "main"]
HEAD_THREAD = ["__clone3", "start_thread"]
HEAD_KTHREAD = ["ret_from_fork_asm_[k]", "ret_from_fork_[k]", "kthread_[k]"]
HEAD_IDLE = ["secondary_startup_64_no_verify_[k]", "start_secondary_[k]", "cpu_startup_entry_[k]",
             "do_idle_[k]"]
SYSCALL_ENTRY = ["entry_SYSCALL_64_after_hwframe_[k]", "do_syscall_64_[k]"]
FAULT_ENTRY = ["asm_exc_page_fault_[k]", "exc_page_fault_[k]", "do_user_addr_fault_[k]",
               "handle_mm_fault_[k]"]
IRQ_ENTRY = ["asm_sysvec_apic_timer_interrupt_[k]", "sysvec_apic_timer_interrupt_[k]",
             "__sysvec_apic_timer_interrupt_[k]", "hrtimer_interrupt_[k]"]
# Where a branch may start at the earliest, by the stack's second frame: past the fixed head.
HEAD_LEN = {HEAD_MAIN[0]: len(HEAD_MAIN) + 1, HEAD_THREAD[0]: len(HEAD_THREAD) + 1,
            HEAD_KTHREAD[0]: len(HEAD_KTHREAD) + 1, HEAD_IDLE[0]: len(HEAD_IDLE) + 1}
PLACEHOLDERS = ["[unknown]", "[libc.so.6]", "[anon]", "[libstdc++.so.6.0.30]", "[vdso]",
                "[libpthread.so.0]", "[ld-linux-x86-64.so.2]", "[libssl.so.3]", "[libz.so.1]"]
LIBC = ["malloc", "free", "__memmove_avx_unaligned_erms", "__memset_avx2_unaligned_erms",
        "_int_malloc", "_int_free", "__GI___libc_write", "__GI___libc_read", "__poll",
        "epoll_wait", "pthread_mutex_lock", "__lll_lock_wait", "pthread_cond_wait@@GLIBC_2.3.2",
        "__futex_abstimed_wait_common", "__strlen_avx2", "__strcmp_avx2", "__memcmp_avx2_movbe",
        "clock_gettime@@GLIBC_2.17", "__vdso_clock_gettime", "operator new(unsigned long)",
        "operator delete(void*, unsigned long)", "__cxa_throw", "_Unwind_RaiseException",
        "__nanosleep", "__libc_sendmsg", "__libc_recvmsg", "sysmalloc", "malloc_consolidate",
        "unlink_chunk.constprop.0", "__GI___pthread_mutex_unlock_usercnt"]

# Word lists the synthetic names are made of.
VERBS = ("get set init free alloc process handle read write send recv parse emit flush "
         "lookup insert remove update commit submit poll wait wake lock unlock scan merge "
         "sort hash encode decode compress inflate deflate copy move resize grow shrink "
         "reset start stop run dispatch schedule yield push pop visit walk build compile "
         "eval call invoke resolve load store sync map unmap find match validate check "
         "apply reduce splice split join fill drain open close bind accept connect").split()
NOUNS = ("buffer page node entry request response header body chunk block inode dentry "
         "socket conn session table index key value tuple row column frame stack queue "
         "list tree heap arena pool cache slab object string token symbol expr stmt type "
         "module context state config event timer signal thread task worker job batch "
         "record segment file path name range region vma folio bio skb packet message "
         "channel stream cursor iter span slot bucket shard lease txn log wal checkpoint "
         "snapshot tile glyph layer shader texture mesh plan query scope").split()
C_PREFIXES = ("ngx_http ngx pg Exec heap_ btree sqlite3 g_ gtk_ xml lua_ luaV_ zstd_ "
              "ZSTD_ deflate_ inflate_ ssl_ SSL_ EVP_ ev_ uv_ redis rdb dict "
              "curl_ Curl_ php_ zend_ Py PyObject_ _PyEval_ rb_ vm_ mono_ jemalloc_ je_ "
              "tc_ av_ ff_ x264_ vp9_ wl_ drm_ mesa_ st_ gl yyparse_ hb_ FT_ png_ "
              "cairo_ pixman_ dbus_ sd_ systemd_ journal_ git_ xdiff_").split()
K_PREFIXES = ("tcp_ udp_ ip_ ipv6_ sock_ sk_ skb_ __netif_ net_rx_ napi_ dev_ ext4_ "
              "xfs_ btrfs_ jbd2_ blk_ bio_ nvme_ scsi_ vfs_ do_ __do_ generic_ filemap_ "
              "page_ folio_ mm_ __mm_ vma_ mmap_ handle_ __handle_ try_to_ "
              "sched_ __sched_ pick_next_ enqueue_ dequeue_ update_ rcu_ __rcu_ "
              "irq_ __irq_ softirq_ hrtimer_ tick_ ktime_ futex_ __futex_ ep_ "
              "__x64_sys_ ksys_ security_ apparmor_ selinux_ kmem_cache_ __kmalloc_ "
              "kfree_ __alloc_pages_ get_page_from_ zap_ unmap_ copy_ clear_ "
              "native_ __native_ x86_ intel_ acpi_ pci_ usb_ drm_ i915_ amdgpu_").split()
CXX_NS = ("std v8 v8::internal blink base net mojo cc viz gpu skia content llvm clang "
          "boost boost::asio folly facebook grpc google::protobuf absl tensorflow "
          "rocksdb leveldb mongo mysql duckdb arrow parquet Eigen Qt QtCore webrtc "
          "spdlog fmt::v10 nlohmann seastar envoy envoy::Http ceph rgw").split()
CXX_CLASSES = ("Isolate Heap Scavenger MarkCompactCollector Parser Compiler Interpreter "
               "Runtime Builtins Object String Map HashTable Scheduler TaskRunner "
               "MessageLoop ThreadPool Connection Session Request Response Handler "
               "Dispatcher Channel Stream Buffer Allocator Arena Table Index Cursor "
               "Iterator Visitor Builder Reader Writer Encoder Decoder Compactor "
               "MemTable WriteBatch DBImpl Version VersionSet BlockBasedTable "
               "LayerTreeHost Document Element Node LayoutObject Paint Renderer "
               "Pipeline Operator Executor Planner Optimizer Expression Vector "
               "Serializer Deserializer Message Reflection Arena Server Client Worker").split()
CXX_TYPES = ("int", "long", "unsigned int", "unsigned long", "bool", "char const*",
             "void*", "double", "std::string const&", "std::string_view",
             "std::vector<int, std::allocator<int> > const&", "size_t", "unsigned char*",
             "std::unique_ptr<Task, std::default_delete<Task> >", "Slice const&",
             "Status*", "Handle<Object>", "Isolate*", "Options const&", "int64_t",
             "std::function<void ()>", "absl::Span<char const>", "Node*", "float")
RUST_CRATES = ("core alloc std tokio hyper serde serde_json regex rayon futures_util "
               "mio bytes h2 tonic tracing hashbrown crossbeam_channel parking_lot "
               "ripgrep grep_searcher ignore walkdir aho_corasick memchr rustc_middle "
               "rustc_hir rustc_codegen_llvm syn proc_macro2 quote").split()
JAVA_PKGS = ("java/util java/lang java/io java/nio java/util/concurrent "
             "org/apache/kafka/clients org/apache/kafka/common org/springframework/web "
             "io/netty/channel io/netty/buffer com/fasterxml/jackson/databind "
             "org/elasticsearch/search org/apache/lucene/index com/example/service").split()


def camel(words):
    return "".join(w[:1].upper() + w[1:] for w in words)


def vocabulary(rng):
    """About 20,000 distinct names in 5 families (kernel names end in _[k])."""
    kern, c, cxx, rust, java = set(), set(), set(), set(), set()
    while len(kern) < 3500:
        name = rng.choice(K_PREFIXES) + rng.choice(VERBS) + "_" + rng.choice(NOUNS)
        if rng.random() < 0.15:
            name += rng.choice(("_locked", "_slowpath", "_nolock", ".isra.0", ".constprop.0",
                                "_rcu", "_irqsave", ".part.0"))
        kern.add(name + "_[k]")
    while len(c) < 6000:
        p = rng.choice(C_PREFIXES)
        w = [rng.choice(VERBS), rng.choice(NOUNS)]
        if rng.random() < 0.4:
            w.append(rng.choice(NOUNS))
        sep = "" if p.endswith("_") or p[-1].isupper() else "_"
        name = p + sep + ("_".join(w) if rng.random() < 0.7 else camel(w))
        c.add(name)
    while len(cxx) < 7000:
        ns = rng.choice(CXX_NS)
        cls = rng.choice(CXX_CLASSES)
        if rng.random() < 0.2:
            cls += "<" + rng.choice(CXX_TYPES) + ">"
        meth = camel([rng.choice(VERBS), rng.choice(NOUNS)])
        if rng.random() < 0.5:
            meth = meth[0].lower() + meth[1:]
        args = ", ".join(rng.choice(CXX_TYPES) for _ in range(rng.choice((0, 1, 1, 2, 2, 3, 4))))
        name = f"{ns}::{cls}::{meth}({args})"
        if rng.random() < 0.25:
            name += " const"
        if rng.random() < 0.01:  # the occasional template monster
            inner = ", ".join(rng.choice(CXX_TYPES) for _ in range(8))
            name = (f"{ns}::detail::{cls}Impl<{inner}, std::allocator<std::pair<{inner}> > >"
                    f"::{meth}({args})")
        cxx.add(name)
    while len(rust) < 2000:
        cr = rng.choice(RUST_CRATES)
        mod = rng.choice(NOUNS)
        ty = camel([rng.choice(NOUNS)])
        fn = rng.choice(VERBS) + "_" + rng.choice(NOUNS)
        r = rng.random()
        if r < 0.15:
            name = f"<{cr}::{mod}::{ty} as core::ops::drop::Drop>::drop"
        elif r < 0.3:
            name = f"core::ptr::drop_in_place<{cr}::{mod}::{ty}>"
        elif r < 0.45:
            name = f"{cr}::{mod}::{ty}::{fn}::{{{{closure}}}}"
        else:
            name = f"{cr}::{mod}::{ty}::{fn}"
        rust.add(name)
    while len(java) < 1500:
        cls = camel([rng.choice(NOUNS), rng.choice(("Manager", "Handler", "Impl", "Factory",
                                                     "Service", "Util", "Reader", ""))])
        # async-profiler style: _[j] JIT-compiled, _[i] interpreted, _[0] inlined.
        java.add(f"{rng.choice(JAVA_PKGS)}/{cls}.{rng.choice(VERBS)}{camel([rng.choice(NOUNS)])}"
                 f"{rng.choice(('_[j]', '_[j]', '_[j]', '_[i]', '_[0]'))}")
    # Sorted, so that the vocabulary does not depend on set iteration order.
    return {k: sorted(v) for k, v in
            (("kern", kern), ("c", c), ("cxx", cxx), ("rust", rust), ("java", java))}


def zipf_pool(rng, names, size, s=1.1):
    """A list to pick from uniformly in which names[i] appears about size/(i+1)^s times."""
    names = list(names)
    rng.shuffle(names)
    weights = [1.0 / (i + 1) ** s for i in range(len(names))]
    total = sum(weights)
    pool = []
    for n, w in zip(names, weights):
        pool.extend([n] * max(1, round(size * w / total)))
    return pool


PROC_BASES = {
    "c": ["nginx", "postgres", "redis-server", "sqlite3", "httpd", "sshd", "systemd",
          "systemd-journal", "Xorg", "pipewire", "dbus-daemon", "bash", "make", "gcc",
          "cc1", "ld", "as", "git", "curl", "ffmpeg", "x264", "gzip", "zstd", "php-fpm",
          "python3", "perl", "ruby", "lua", "haproxy", "memcached", "rsyslogd", "cron"],
    "cxx": ["chrome", "Chrome_ChildIOT", "ThreadPoolForeg", "CompositorTileW", "node",
            "mysqld", "mongod", "envoy", "clang", "cc1plus", "rocksdb:low", "ceph-osd",
            "clickhouse", "duckdb", "firefox", "Web Content", "gnome-shell", "plasmashell",
            "qemu-system-x86", "grpc_server", "tensorflow", "electron"],
    "rust": ["rg", "rustc", "cargo", "tokio-runtime-w", "alacritty", "fd", "vector",
             "linkerd2-proxy", "firecracker", "tikv-server"],
    "java": ["java", "C2 CompilerThre", "GC Thread#0", "kafka-network-t", "elasticsearch[",
             "VM Thread", "pool-1-thread-1", "ForkJoinPool-1-", "gradle", "jetty-worker"],
    "kthread": ["kworker/u16:3", "ksoftirqd/0", "kswapd0", "jbd2/nvme0n1p2", "rcu_preempt",
                "migration/0", "kcompactd0", "irq/128-nvme0q", "btrfs-transacti", "khugepaged"],
    "idle": ["swapper"],
}


def processes(rng, count):
    """[(name, kind)], count of them, distinct names as comm would show them (15 bytes max)."""
    out, seen = [("swapper", "idle")], {"swapper"}
    kinds = ["c", "c", "c", "cxx", "cxx", "rust", "java", "kthread"]
    while len(out) < count:
        kind = rng.choice(kinds)
        base = rng.choice(PROC_BASES[kind])
        if kind == "kthread":
            stem = base.rstrip("0123456789:/u")
            name = f"{stem}/{rng.randrange(16)}" if "/" in base else f"{stem}{rng.randrange(8)}"
            if base.startswith("kworker"):
                name = f"kworker/{rng.randrange(16)}:{rng.randrange(4)}{rng.choice(('', 'H'))}"
        elif base in seen or rng.random() < 0.6:
            sep = rng.choice(("-", "_", ":", ""))
            role = rng.choice(("worker", "w", "io", "bg", "main", ""))
            name = f"{base}{sep}{role}{rng.randrange(64)}"
        else:
            name = base
        name = name.replace(" ", "_")[:15]  # folded roots have no spaces (flamed writes _)
        if name not in seen:
            seen.add(name)
            out.append((name, kind))
    return out


class Proc:
    __slots__ = ("name", "kind", "user", "kern", "stacks")

    def __init__(self, name, kind):
        self.name, self.kind = name, kind
        self.user = self.kern = None
        self.stacks = []  # [frames], each a list of names, root included


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=50, help="at least this many MB (10^6 bytes)")
    ap.add_argument("--stacks", type=int, default=200000, help="at least this many distinct stacks")
    ap.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    ap.add_argument("--procs", type=int, default=300, help="process names (roots), default 300")
    ap.add_argument("--shuffle", action="store_true",
                    help="lines in random order instead of sorted")
    ap.add_argument("-o", "--output", default="-", help="output file (default stdout)")
    a = ap.parse_args()
    if a.stacks < 1 or a.mb < 0 or a.procs < 1:
        ap.error("--stacks and --procs must be positive, --mb not negative")

    rng = random.Random(a.seed)
    voc = vocabulary(rng)
    # Hot names (memcpy, malloc, the scheduler) are picked far more often than the rest.
    kern_pool = zipf_pool(rng, voc["kern"], 60000)
    libc_pool = zipf_pool(rng, LIBC + PLACEHOLDERS, 2000, 1.3)
    langs = {k: voc[k] for k in ("c", "cxx", "rust", "java")}

    procs = [Proc(n, k) for n, k in processes(rng, a.procs)]
    for p in procs:
        # Each program uses its own slice of the vocabulary; programs of a kind overlap.
        lang = {"kthread": "c", "idle": "c"}.get(p.kind, p.kind)
        names = langs[lang]
        own = rng.sample(names, min(len(names), rng.randrange(300, 2500)))
        if lang != "c":  # C++, Rust and Java programs call C libraries too
            own += rng.sample(langs["c"], rng.randrange(50, 400))
        p.user = zipf_pool(rng, own, 8 * len(own)) + libc_pool
        p.kern = kern_pool
    # Process shares: Zipf, so a few processes hold most stacks (like a busy server).
    proc_pool = zipf_pool(rng, range(len(procs)), 50000, 1.0)

    lines = {}  # stack -> count; insertion order is deterministic
    nbytes = 0
    samples = 0
    target_bytes = a.mb * 1e6
    rand, randrange, choices, pareto = rng.random, rng.randrange, rng.choices, rng.paretovariate

    def head(p):
        if p.kind == "idle":
            return [p.name] + HEAD_IDLE
        if p.kind == "kthread":
            return [p.name] + HEAD_KTHREAD + [choices(p.kern)[0]]
        return [p.name] + (HEAD_MAIN if rand() < 0.4 else HEAD_THREAD)

    def extend(p, frames, depth):
        """Appends frames up to depth, user frames then (maybe) a kernel entry and kernel frames."""
        n = depth - len(frames)
        if n <= 0:
            return frames
        in_kernel = frames[-1].endswith("_[k]")
        if in_kernel:
            return frames + choices(p.kern, k=n)
        r = rand()
        if r < 0.55 or n < 4:  # user only
            return frames + choices(p.user, k=n)
        entry = SYSCALL_ENTRY if r < 0.85 else FAULT_ENTRY if r < 0.95 else IRQ_ENTRY
        nk = min(n - 1, len(entry) + randrange(1, 12))
        nu = n - nk
        k = choices(p.kern, k=nk - len(entry)) if nk > len(entry) else []
        return frames + choices(p.user, k=nu) + entry[:nk] + k

    def target_depth():
        # Mostly 12..35, tails to 5 and 60.
        d = int(rng.gauss(22, 9))
        return 5 if d < 5 else 60 if d > 60 else d

    nprocs = len(procs)
    i = 0
    while len(lines) < a.stacks or nbytes < target_bytes:
        # Every process gets one stack first, then they are picked by their share.
        p = procs[i] if i < nprocs else procs[proc_pool[int(rand() * len(proc_pool))]]
        i += 1
        if not p.stacks:
            frames = extend(p, head(p), max(target_depth(), len(head(p)) + 1))
        else:
            # Branch off a known stack at some depth below its fixed head: a call tree.
            base = p.stacks[int(rand() * len(p.stacks))]
            lo = HEAD_LEN.get(base[1], 4)
            # Deeper cuts are likelier: call trees fan out most near the leaves.
            u = rand()
            v = rand()
            cut = lo + int((u if u > v else v) * (len(base) - lo)) if len(base) > lo else len(base)
            d = target_depth()
            if d <= cut:
                d = min(60, cut + 1 + int(rand() * 3))
            frames = extend(p, base[:cut], d)
        p.stacks.append(frames)
        key = ";".join(frames)
        count = int(pareto(1.1))
        if count > 2000000:
            count = 2000000
        samples += count
        if key in lines:
            lines[key] += count
        else:
            lines[key] = count
            nbytes += len(key) + len(str(count)) + 2

    keys = list(lines)
    if a.shuffle:
        rng.shuffle(keys)
    else:
        keys.sort()  # str order is code point order: byte order for UTF-8, like sort(1) in C locale
    out = sys.stdout if a.output == "-" else open(a.output, "w", encoding="utf-8", newline="\n")
    try:
        step = 20000
        for j in range(0, len(keys), step):
            out.write("".join(f"{k} {lines[k]}\n" for k in keys[j:j + step]))
    finally:
        if out is not sys.stdout:
            out.close()
    size = sum(len(k) + len(str(lines[k])) + 2 for k in keys)
    print(f"gen_folded: {len(keys)} stacks {size} bytes {samples} samples", file=sys.stderr)


if __name__ == "__main__":
    main()
